"""One number format on the page: config and summary values to 6 significant digits, as the
metric columns, the whole number on hover (issue 48)."""

from __future__ import annotations

from snapshot_store.format.summary import RunSummary, SeriesStats
from snapshot_store.read.store_reader import Update
from visualizer.model.rundata import RunData
from visualizer.panes.groups import group_runs
from visualizer.panes.hparams import comparison_table, run_table
from visualizer.panes.run_rows import cells
from visualizer.panes.values import value_cell, value_text

LR = 0.17793913926482965
HOVER = '<span title="0.17793913926482965">0.177939</span>'


def _run(name: str, lr: float, seed: int) -> RunData:
    run = RunData(name)
    meta = {"name": name, "options": {"lr": lr, "seed": seed, "opt": "adam"}}
    run.apply(Update(meta=meta, status={"summary": {"test": {"score": LR}}}))
    return run


def test_a_float_prints_6_significant_digits_the_whole_on_hover_other_values_as_they_are():
    assert value_text(LR, 80) == "0.177939" and value_cell(LR, 80) == HOVER
    assert value_cell(0.5, 80) == "0.5" and value_cell(1e-4, 80) == "0.0001"
    assert value_cell(123456789, 80) == "123456789", "an integer is exact: every digit"
    assert value_cell("<b>", 80) == "&lt;b&gt;" and value_cell(True, 80) == "True"


def test_the_runs_table_the_comparison_and_a_runs_page_print_config_and_summary_alike():
    summary = RunSummary(
        "a",
        config={"lr": LR},
        values={"score": LR},
        series={"val/loss": SeriesStats(3, 2, LR, LR, LR)},
    )
    row = cells(summary, "val/loss", (["lr"], ["summary.score"]), "a", 0.0)
    assert row[-4:] == ["0.177939", "0.177939", HOVER, HOVER], "metric columns beside them"
    runs = [_run("a", LR, 1), _run("b", 0.01, 2)]
    assert HOVER in comparison_table(runs, None)
    page = run_table(runs[0])
    assert page.count(HOVER) == 2 and "0.17793913926482965<" not in page, "option and summary"
    seeds = [
        _run(f"{r.name}{seed}", lr, seed) for r, lr in zip(runs, (LR, 0.01)) for seed in (1, 2)
    ]
    labels = [g.label for g in group_runs(seeds, "seed")]
    assert any("lr=0.177939" in label for label in labels), labels
