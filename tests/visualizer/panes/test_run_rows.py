"""The runs table's rows: the options that differ, the filter, the order."""

from __future__ import annotations

from snapshot_store.format.summary import RunSummary, SeriesStats
from visualizer.panes.run_rows import (
    TableView,
    cells,
    matcher,
    select,
    summary_columns,
    varying_options,
)


def _summaries(n: int) -> list[RunSummary]:
    return [
        RunSummary(
            f"run-{i:04d}",
            updated=float(i) if i % 5 else None,
            series={"val/acc": SeriesStats(3, 2, 0.1 * i, 0.0, 0.1 * i)},
            config={"lr": 0.1 * (i % 3), "batch": 8},
        )
        for i in range(n)
    ]


def test_only_the_options_that_differ_get_columns():
    summaries = [*_summaries(6), RunSummary("bare")]
    assert varying_options(summaries) == ["batch", "lr"], "a run without 'batch' differs too"
    assert varying_options(_summaries(6)) == ["lr"]


def test_a_filter_is_a_regular_expression_else_plain_text():
    assert matcher("^run-00[12]")("run-0012") and not matcher("^run-00[12]")("run-0032")
    assert matcher("lr=0.1 (")("sweep lr=0.1 (3)"), "not a regex: searched as text"
    assert matcher("RUN")("a run"), "any case"


def test_runs_without_the_sorted_value_come_last_whatever_the_order():
    summaries = _summaries(10)
    for descending in (True, False):
        rows = select(summaries, TableView(descending=descending), "val/acc", 0.0)
        assert [s.name for s in rows[-2:]] == ["run-0000", "run-0005"]
    best = select(summaries, TableView(sort="best value"), "val/acc", 0.0)
    assert best[0].name == "run-0009", "an accuracy's best is its largest"


def test_the_summary_runs_set_beside_their_series_gets_columns_as_the_export_names_them():
    summaries = [
        RunSummary(
            f"run-{i}",
            series={"loss": SeriesStats(3, 2, 0.5, 0.1, 0.9)},
            values={"loss": 0.5, "best": {"epoch": i, "acc": 0.9}, "model": "resnet"}
            | ({"rare": 1} if i == 0 else {}),
        )
        for i in range(3)
    ]
    keys = summary_columns(summaries)
    assert keys == ["summary.best.acc", "summary.best.epoch", "summary.model", "summary.rare"]
    assert "summary.loss" not in keys, "a series' last value has its own column"
    row = cells(summaries[1], None, ([], keys), "run-1", 0.0)
    assert row[-4:] == ["0.9", "1", "resnet", "-"]


def test_each_value_is_told_against_the_baseline_run():
    base = RunSummary("base", series={"val/acc": SeriesStats(3, 2, 0.8, 0.1, 0.85)})
    run = RunSummary("new", series={"val/acc": SeriesStats(3, 2, 0.75, 0.1, 0.9)})
    assert cells(run, "val/acc", ([], []), "new", 0.0, base)[6:8] == ["0.75 (-0.05)", "0.9 (+0.05)"]
    assert cells(base, "val/acc", ([], []), "base", 0.0, base)[6:8] == ["0.8", "0.85"]
    assert cells(run, "val/acc", ([], []), "new", 0.0, None)[6:8] == ["0.75", "0.9"]
