"""Hyperparameter tables from the runs' stored options."""

from __future__ import annotations

import math
import re

from snapshot_store.read.store_reader import Update
from visualizer.model.rundata import RunData
from visualizer.model.summary import from_run
from visualizer.panes.compare import Selection
from visualizer.panes.hparams import (
    MAX_COLUMNS,
    PANE_CHARS,
    comparison_table,
    last_value,
    options_of,
    run_table,
    sort_runs,
)
from visualizer.runset import compared


def run(name: str, options: dict | None, loss: list[float] | None = None) -> RunData:
    data = RunData(name)
    data.apply(Update(meta={"name": name, "options": options} if options is not None else None))
    if loss:
        steps = list(range(len(loss)))
        data.apply(Update(scalars=[("val", "loss", steps, steps, [0.0] * len(loss), loss)]))
    return data


def test_a_runs_options_are_listed_escaped_and_cut():
    table = run_table(run("a", {"lr": 0.1, "note": "<b>" + "x" * 200}))
    assert "<td style" in table and "0.1" in table and "&lt;b&gt;" in table
    assert "x" * 100 not in table and "…" in table
    assert "stored no options" in run_table(run("b", None))


def test_a_runs_page_lists_the_hparams_it_logged_as_the_runs_table_does():
    """add_hparams' lr and seed are in the runs table's row (the run's config): its page too."""
    data = run("a", None)
    data.apply(Update(status={"state": "finished", "hparams": {"lr": 0.01, "seed": 3}}))
    assert from_run(data).config == {"lr": 0.01, "seed": 3}
    table = run_table(data)
    assert "stored no options" not in table
    assert table.index("lr") < table.index("0.01") < table.index("seed")


def test_the_summary_a_run_set_follows_its_options_dotted_and_escaped():
    data = run("a", {"lr": 0.1})
    summary = {"best_model": "<img src=x onerror=alert(1)>", "best": {"epoch": 3}, "c": [1, 2]}
    data.apply(Update(status={"state": "finished", "summary": summary}))
    table = run_table(data)
    assert table.index("option") < table.index(">summary<") < table.index("best.epoch")
    assert "&lt;img src=x onerror=alert(1)&gt;" in table and "<img" not in table
    assert "[1, 2]" in table and ">summary<" not in run_table(run("b", {"lr": 0.1}))


def test_options_that_differ_are_columns_and_shared_ones_a_table_of_their_own():
    runs = [run("a", {"lr": 0.1, "seed": 1}), run("b", {"lr": 0.01, "seed": 1})]
    table = comparison_table(runs, None)
    assert ">lr</th>" in table and ">seed</th>" not in table
    shared = table.partition(">same in every run</th>")[2]
    assert shared and "</table><table" in table, "the shared options are a table of their own"
    assert re.search(r"<tr><td[^>]*>seed</td><td[^>]*>1</td></tr>", shared), shared
    assert options_of(runs[0]) == {"lr": "0.1", "seed": "1"}


def test_one_path_spelled_two_ways_is_not_a_difference():
    runs = [
        run("a", {"checkpoints_dir": "checkpoints", "dataroot": "data/a"}),
        run("b", {"checkpoints_dir": "./checkpoints/", "dataroot": "data/b"}),
    ]
    table = comparison_table(runs, None)
    assert ">checkpoints_dir</th>" not in table and ">dataroot</th>" in table
    shared = table.partition(">same in every run</th>")[2]
    assert re.search(r"<td[^>]*>checkpoints_dir</td><td[^>]*>checkpoints</td>", shared), shared


def test_runs_sort_by_the_best_value_of_a_series_best_first_missing_and_nan_last():
    runs = [
        run("a", {}, [1.0, 0.5]),
        run("b", {}, [0.9, 0.2]),
        run("c", {}),
        run("d", {}, [math.nan]),
        run("e", {}, [0.1, 0.7]),  # the best loss, though not the best last one
    ]
    key = ("val", "loss")
    assert last_value(runs[1], key) == 0.2 and last_value(runs[2], key) is None
    assert [r.name for r in sort_runs(runs, key)] == ["e", "b", "a", "c", "d"]
    assert [r.name for r in sort_runs(runs, key, descending=True)] == ["a", "b", "e", "c", "d"]
    assert [r.name for r in sort_runs(runs, None)] == ["a", "b", "c", "d", "e"]
    table = comparison_table(runs, key, links={"b": "http://h/env/b"})
    assert table.index(">e<") < table.index('<a href="http://h/env/b">b</a>') < table.index(">a<")
    assert "val/loss (best)" in table and ">0.1<" in table


def test_the_runs_compared_are_the_best_the_comparisons_table_lists_first():
    """Issue 48: the choice (by each run's best) and the table (by the last) disagreed."""
    losses = {f"r{i}": [0.05 + i / 100, 0.5 - i / 100] for i in range(10)}  # best != last
    runs = [run(name, {}, loss) for name, loss in losses.items()]
    for key, descending in ((("val", "loss"), False), (("val", "loss"), True)):
        selection = Selection(sort_by=key, descending=descending)
        chosen = [s.name for s in compared([from_run(r) for r in runs], selection, 3)]
        table = comparison_table(runs, key, descending)
        listed = re.findall(r"<td[^>]*>(r\d)</td>", table)
        assert chosen == listed[:3]


# --- a pane's byte budget: 12,000 options made panes of 4 MB and a stop of 13.5 s ----------


def test_a_run_of_12000_options_shows_the_first_ones_and_says_where_the_rest_are():
    table = run_table(run("a", {f"key_{i:05d}": "x" * 60 for i in range(12_000)}))
    assert len(table) < PANE_CHARS + 1_000  # was 4.4 MB
    assert "key_00000" in table and "key_11999" not in table
    shown = table.count("key_")
    assert f"… {12_000 - shown:,} more options" in table and "--kind runs" in table


def test_the_comparison_of_runs_of_12000_differing_options_stays_within_its_budget():
    runs = [run(f"r{r}", {f"key_{i:05d}": f"{r}-{i}" for i in range(12_000)}) for r in range(8)]
    table = comparison_table(runs, None)
    assert len(table) < 2 * PANE_CHARS + 1_000  # was 4.1 MB
    assert f"… {12_000 - MAX_COLUMNS:,} more options differ" in table
    shared = [run(f"s{r}", {f"key_{i:05d}": "same" * 20 for i in range(12_000)}) for r in range(2)]
    table = comparison_table(shared, None)
    assert len(table) < 2 * PANE_CHARS + 1_000 and "more options (" in table
