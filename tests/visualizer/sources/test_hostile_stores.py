"""A hostile or odd store among many ends nothing: the viewer's catalog and runs table, the
Api and ``export --kind runs`` show it as ``unreadable: <why>``, warn once, and read the rest.

Each store of :mod:`tests.fixtures.runs.hostile` once ended every reader of its root.
"""

from __future__ import annotations

import csv
import io
import logging
import time

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.hostile import HOSTILE, write_good, write_hostile
from visualizer import cli
from visualizer.__main__ import main
from visualizer.api import Api
from visualizer.panes.run_rows import cells, summary_columns, varying_options
from visualizer.sources.catalog import Catalog
from visualizer.sources.runs import LocalRuns

GOOD = 3
WHY = {
    "huge-int-config": "integer of 16,610 bits",
    "huge-updated": "integer of 1,329 bits",
    "cyclic-config": "holds itself",
    "cyclic-summary": "holds itself",
    "dag-config": "more than 1,000,000 values",
    "dag-summary": "more than 1,000,000 values",
    "deep-options": "nested more than 128 deep",
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """A root a hostile store: it among :data:`GOOD` good runs."""
    made = {}
    for name in HOSTILE:
        root = tmp_path_factory.mktemp(name)
        write_good(root, GOOD)
        write_hostile(root, name)
        made[name] = root
    return made


def _warnings(caplog, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
            and name in r.getMessage()]  # fmt: skip


def catalog_rows(root) -> dict[str, list[object]]:
    """Every run the viewer's catalog reads under ``root``, drawn as the runs table's row."""
    catalog = Catalog(LocalRuns(root), 1.0, 60.0, few=1)
    try:
        catalog.scan()
        while not catalog.complete:
            catalog.collect(wait=5.0)
    finally:
        catalog.close()
    summaries = [entry.summary for entry in catalog.entries.values()]
    columns = (varying_options(summaries), summary_columns(summaries))
    now = time.time()
    return {s.name: cells(s, "train/loss", columns, s.name, now) for s in summaries}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_viewers_runs_table_shows_a_hostile_store_as_unreadable(roots, name, caplog):
    caplog.set_level(logging.WARNING)
    rows = catalog_rows(roots[name])
    assert len(rows) == GOOD + 1
    state = rows[name][1]
    assert state.startswith(f"unreadable: {roots[name] / name / 'pickle'}"), state
    assert WHY[name] in state, state
    assert all(row[1] in ("finished", "failed", "stopped") for n, row in rows.items() if n != name)
    assert len(_warnings(caplog, name)) == 1, caplog.text


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_api_lists_a_hostile_store_as_unreadable_with_one_warning(roots, name, caplog):
    caplog.set_level(logging.WARNING)
    runs = {run.name: run for run in Api().runs(str(roots[name]))}
    assert len(runs) == GOOD + 1
    assert runs[name].state == "unreadable" and runs[name].config == {}
    told = _warnings(caplog, name)
    assert len(told) == 1 and WHY[name] in told[0], told


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_runs_export_writes_a_hostile_store_as_an_unreadable_row(
    roots, name, fmt, capsysbinary, caplog
):
    caplog.set_level(logging.WARNING)
    argv = ["export", "--pickle-dir", str(roots[name]), "--kind", "runs", "--format", fmt]
    assert main(argv) == ExitCode.OK
    out = capsysbinary.readouterr().out
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out.decode())))
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(io.BytesIO(out)).to_pylist()
    states = {row["name"]: row["state"] for row in rows}
    assert len(states) == GOOD + 1 and states[name] == "unreadable", states
    assert len(_warnings(caplog, name)) == 1


@pytest.mark.integration
def test_the_viewer_tells_of_each_hostile_store_once_and_draws_the_others(
    tmp_path, visdom_server, reader, run_name, caplog
):
    """Few runs are all followed, but for a store over the budget: its row says why, once
    (reading it whole told of each document again, then called it readable again)."""
    caplog.set_level(logging.INFO)
    good = write_good(tmp_path, GOOD)
    for name in HOSTILE:
        write_hostile(tmp_path, name)
    argv = ["--pickle-dir", str(tmp_path), "--once", "--no-start-server",
            "--port", str(visdom_server.endpoint.port), "--env", run_name]  # fmt: skip
    assert cli.main(argv) == ExitCode.OK, caplog.text
    for name in HOSTILE:
        assert len(_warnings(caplog, name)) == 1, _warnings(caplog, name)
    assert "readable again" not in caplog.text
    assert all(reader.windows(f"{run_name}_{name}") for name in good)


# --- a thousand good runs and one of each hostile store ----------------------------------------

THOUSAND = 1_000


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    """1,000 tiny good runs, one store of each :data:`HOSTILE` kind, a store folder that links
    to itself and a run that links out of the root."""
    root = tmp_path_factory.mktemp("crowd")
    write_good(root, THOUSAND)
    for name in HOSTILE:
        write_hostile(root, name)
    (root / "looped").mkdir()
    (root / "looped" / "pickle").symlink_to(root / "looped" / "pickle")
    outside = tmp_path_factory.mktemp("outside")
    write_good(outside, 1)
    (root / "linked").symlink_to(outside / "run-00000")
    return root


def _one_warning_each(caplog) -> None:
    for name in HOSTILE:
        assert len(_warnings(caplog, f"run {name}:")) == 1, name


def test_the_viewer_shows_a_thousand_good_rows_and_one_unreadable_row_per_hostile_store(
    crowd, caplog
):
    caplog.set_level(logging.WARNING)
    rows = catalog_rows(crowd)
    states = {name: str(row[1]) for name, row in rows.items()}
    assert sorted(n for n, s in states.items() if s.startswith("unreadable: ")) == sorted(HOSTILE)
    assert sum(s in ("finished", "failed", "stopped") for s in states.values()) == THOUSAND
    assert len(rows) == THOUSAND + len(HOSTILE)
    _one_warning_each(caplog)


def test_the_api_lists_the_thousand_and_warns_once_per_hostile_store(crowd, caplog):
    caplog.set_level(logging.WARNING)
    runs = Api().runs(str(crowd))
    readable = [run for run in runs if run.state != "unreadable"]
    assert len(readable) == THOUSAND and len(runs) == THOUSAND + len(HOSTILE)
    _one_warning_each(caplog)


def test_the_runs_export_writes_the_thousand_rows(crowd, capsys):
    assert main(["export", "--pickle-dir", str(crowd), "--kind", "runs"]) == ExitCode.OK
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sum(row["state"] != "unreadable" for row in rows) == THOUSAND
    assert sorted(row["name"] for row in rows if row["state"] == "unreadable") == sorted(HOSTILE)
