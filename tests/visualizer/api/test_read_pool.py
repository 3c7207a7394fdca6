"""``Api().runs()`` reading many runs in worker processes (visualizer/api/read_pool.py): the
same runs, warnings and cache as read in this process; a worker that can not start leaves
its runs to this process."""

from __future__ import annotations

import logging
import sys

import pytest

from snapshot_store.format import frames as fmt
from tests.fixtures.runs.hostile import HOSTILE, write_good, write_hostile
from visualizer.api import Api, client, read_pool
from visualizer.api.summary_cache import cache_file
from workloads.many_runs import write_runs

RUNS = 6


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Six runs: 0, 4 and 5 as written; 1 with a corrupt status, 2 with one that keeps no
    summary (read whole), 3 with one the cache does not keep (a tuple)."""
    root = tmp_path_factory.mktemp("pooled")
    write_runs(root, RUNS, points=10, workers=1)

    def status(index):
        return root / f"run-{index:05d}" / "pickle" / fmt.STATUS_FILE

    status(1).write_bytes(status(1).read_bytes()[:-1] + b"\0")  # its checksum fails
    for index, change in ((2, lambda s: s.pop("series")), (3, lambda s: s.update(summary=(1,)))):
        document = fmt.decode_document(status(index).read_bytes(), "status")
        change(document)
        status(index).write_bytes(fmt.encode_document(document))
    return root


def _listed(sweep, monkeypatch, tmp_path, caplog):
    """The runs as listed the first time, the warnings logged and the runs read here."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    read_here = []
    read = client._read
    monkeypatch.setattr(
        client, "_read", lambda found: read_here.append(found.folder) or read(found)
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        runs = Api().runs(str(sweep))
    listed = [(run.name, run.state, run.config, run.summary) for run in runs]
    return listed, sorted(r.getMessage() for r in caplog.records), read_here


def test_runs_read_in_workers_are_those_read_here(sweep, monkeypatch, tmp_path, caplog):
    here = _listed(sweep, monkeypatch, tmp_path / "here", caplog)
    assert len(here[2]) == RUNS  # fewer than MIN_RUNS: all read in this process
    monkeypatch.setattr(read_pool, "MIN_RUNS", 1)
    monkeypatch.setattr(read_pool, "cores", lambda: 2)
    pooled = _listed(sweep, monkeypatch, tmp_path / "pooled", caplog)
    assert pooled[:2] == here[:2]  # the same runs, the same warnings (told here, once)
    assert any("status.pickle" in message for message in pooled[1])
    assert pooled[2] == ["run-00001", "run-00002", "run-00003"]  # the others came from workers
    kept = cache_file(str(sweep)).read_text()
    assert kept.count("\t[{") == 3
    assert _listed(sweep, monkeypatch, tmp_path / "pooled", caplog)[0] == here[0]  # from it


def test_a_worker_that_can_not_start_leaves_its_runs_here(sweep, monkeypatch, tmp_path, caplog):
    here = _listed(sweep, monkeypatch, tmp_path / "here", caplog)
    monkeypatch.setattr(read_pool, "MIN_RUNS", 1)
    monkeypatch.setattr(read_pool, "cores", lambda: 2)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    listed, warnings, read_here = _listed(sweep, monkeypatch, tmp_path / "pooled", caplog)
    assert (listed, warnings) == here[:2]
    assert len(read_here) == RUNS


def test_hostile_stores_read_by_workers_warn_once_each_here(tmp_path, monkeypatch, caplog):
    write_good(tmp_path / "runs", 2)
    for name in HOSTILE:
        write_hostile(tmp_path / "runs", name)
    here = _listed(tmp_path / "runs", monkeypatch, tmp_path / "here", caplog)
    monkeypatch.setattr(read_pool, "MIN_RUNS", 1)
    monkeypatch.setattr(read_pool, "cores", lambda: 2)
    pooled = _listed(tmp_path / "runs", monkeypatch, tmp_path / "pooled", caplog)
    assert pooled[:2] == here[:2]
    assert sorted(pooled[2]) == sorted(HOSTILE)  # each told of here, once; the good ones pooled
    assert sum(run[1] == "unreadable" for run in pooled[0]) == len(HOSTILE)
