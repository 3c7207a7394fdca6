"""The runs table's columns: nested config dotted, lists as JSON, each column one type."""

from __future__ import annotations

import io

from snapshot_store.format.summary import RunSummary, SeriesStats
from snapshot_store.read.local_source import LocalSource
from visualizer.api.run import ApiRun
from visualizer.api.table import arrow_table, runs_columns, write_runs_csv


def _run(name: str, options: dict, last: float | None = 0.5) -> ApiRun:
    summary = RunSummary(name, state="finished", step=9, started=0.0, updated=30.0)
    if last is not None:
        summary.series["val/loss"] = SeriesStats(10, 9, last, last, last)
    return ApiRun(name, LocalSource(f"/nowhere/{name}"), summary, {"options": options})


def test_config_is_dotted_and_a_list_is_json():
    columns = runs_columns([_run("a", {"model": {"depth": 3}, "widths": [8, 16]})])
    assert columns["config.model.depth"] == [3]
    assert columns["config.widths"] == ["[8, 16]"]
    assert columns["duration"] == [30.0] and columns["steps"] == [9]


def test_a_column_missing_in_a_run_is_empty_and_mixed_types_are_text():
    runs = [_run("a", {"lr": 0.1, "seed": 1}), _run("b", {"lr": "auto"}, last=None)]
    columns = runs_columns(runs)
    assert columns["config.seed"] == [1, None] and columns["summary.val/loss"] == [0.5, None]
    table = arrow_table(columns)
    assert str(table.schema.field("config.lr").type) == "string"
    assert str(table.schema.field("config.seed").type) == "int64"
    out = io.StringIO()
    assert write_runs_csv(columns, out) == 2
    header, first, second = out.getvalue().splitlines()
    assert first.startswith("a,finished,9,1970-01-01T00:00:00+00:00,30.0,0.1,1,0.5")
    assert second == "b,finished,9,1970-01-01T00:00:00+00:00,30.0,auto,,"


def test_ints_beyond_int64_are_kept_as_text():
    table = arrow_table(runs_columns([_run("a", {"big": 2**70})]))
    assert table.column("config.big").to_pylist() == [str(2**70)]
