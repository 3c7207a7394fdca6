"""``Api().runs()``'s cache of run documents (visualizer/api/summary_cache.py): a run whose
status did not change is not read again; one that changed is; a broken cache is ignored
and rewritten."""

from __future__ import annotations

import os

import pytest

from snapshot_store.format import frames as fmt
from visualizer.api import Api
from visualizer.api.summary_cache import FORMAT, cache_file
from workloads.many_runs import write_runs

RUNS = 3


@pytest.fixture
def sweep(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_runs(tmp_path / "sweep", RUNS, points=10, workers=1)
    return tmp_path / "sweep"


def _status(sweep, index):
    return sweep / f"run-{index:05d}" / "pickle" / fmt.STATUS_FILE


def _rewrite_status(sweep, index, **changes):
    """Rewrite run ``index``'s status with ``changes``; its size and mtime change."""
    path = _status(sweep, index)
    status = fmt.decode_document(path.read_bytes(), path) | changes
    path.write_bytes(fmt.encode_document(status))


def _states(sweep):
    return [run.state for run in Api().runs(str(sweep))]


def test_an_unchanged_status_is_not_read_again(sweep):
    first = _states(sweep)
    assert cache_file(str(sweep)).read_text().startswith(f'{{"format": "{FORMAT}"')
    path = _status(sweep, 1)  # garbage of the same size and mtime: only a read would see it
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _states(sweep) == first


def test_a_changed_status_is_read_again(sweep):
    assert _states(sweep)[2] != "running"
    _rewrite_status(sweep, 2, state="running", step=4)
    runs = Api().runs(str(sweep))
    assert (runs[2].state, runs[2].step) == ("running", 4)
    assert [run.state for run in Api().runs(str(sweep))][2] == "running"  # and kept so


def _each_line(text):
    return lambda line: line.split("\t")[0] + "\t" + text


@pytest.mark.parametrize(
    ("broken", "rewritten"),
    [
        (b"\xff\xfe not text", True),
        (b'{"format": "another cache"}\n', True),
        (b"", True),
        (_each_line('{"status": [1, 2'), True),  # cut short: the runs are read again
        (_each_line("[1, 2"), True),
        (_each_line("[]"), True),
        (_each_line('["not a line"'), True),
        # Whole, and no [status, meta]: each run is read again when its documents are asked for.
        (_each_line('[{"state": 3}, 5]'), False),
        (_each_line('[{"a": ' * 100_000 + "]"), False),  # nested past what json decodes
    ],
)
def test_a_broken_cache_file_is_ignored_and_rewritten(sweep, broken, rewritten):
    def listed():
        return [(run.name, run.state, run.config, run.summary) for run in Api().runs(str(sweep))]

    expected = listed()
    path = cache_file(str(sweep))
    if callable(broken):
        head, *lines = path.read_text().splitlines()
        broken = "\n".join([head, *map(broken, lines), ""]).encode()
    path.write_bytes(broken)
    assert listed() == expected
    if rewritten:
        assert path.read_text().count("\t[{") == RUNS
    else:
        assert path.read_bytes() == broken  # the listing read no changed status: nothing to write


@pytest.mark.parametrize(
    ("change", "kept"),
    [
        ({}, True),
        ({"summary": {"loss": float("nan"), "best": float("inf")}}, True),  # == can not tell
        ({"summary": {"shape": (3, 4)}}, False),  # JSON gives a list back
        ({"summary": {1: "one"}}, False),  # and a text key
        ({"summary": {"raw": b"\0"}}, False),  # and no bytes at all
    ],
)
def test_only_documents_json_gives_back_as_they_were_are_kept(sweep, change, kept):
    _rewrite_status(sweep, 0, **change)
    first = Api().runs(str(sweep))[0].summary
    assert cache_file(str(sweep)).read_text().count("\t[{") == RUNS - (not kept)
    assert repr(Api().runs(str(sweep))[0].summary) == repr(first)
