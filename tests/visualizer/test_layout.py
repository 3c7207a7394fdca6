"""Which window shows a series, and in what order a run's windows come."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_store.read.store_reader import Update, read_store
from visualizer import layout, markup
from visualizer.model.rundata import RunData
from visualizer.panes.compare import series_title
from visualizer.panes.display import RunDisplay

V1_STORE = Path(__file__).parents[1] / "snapshot_store" / "data" / "store_v1"


def _run(series: list[tuple[str, str]]) -> RunData:
    run = RunData("r")
    run.apply(Update(scalars=[(g, n, [0, 1], [0, 0], [0.0, 1.0], [1.0, 2.0]) for g, n in series]))
    return run


def test_system_metrics_get_a_window_each_after_every_group():
    # cpu_percent (0-100), rss_gib (~0.3) and loader_wait_share (0-0.15) on one axis
    # were two flat lines.
    run = _run(
        [("system", "rss_gib"), ("train", "loss"), ("system", "cpu_percent"), ("weird", "x")]
    )
    windows = [(spec.title, sorted(lines)) for spec, lines, _ in RunDisplay._windows(run)]
    assert windows == [
        ("train losses", ["loss"]),
        ("weird", ["x"]),
        ("system: cpu_percent", ["cpu_percent"]),
        ("system: rss_gib", ["rss_gib"]),
    ]


def test_other_groups_keep_one_window_per_group():
    assert layout.window_for("val", "loss") == layout.window_for("val", "mse")
    assert layout.window_for("eval", "f1").win == layout.window_for("val", "accuracy").win
    assert layout.window_for("system", "a").win != layout.window_for("system", "b").win


@pytest.mark.parametrize(
    ("group", "name", "title"),
    [
        ("val", "accuracy", "validation scores"),
        ("", "val_acc_epoch", "validation scores"),
        ("eval", "top5", "validation scores"),
        ("train", "acc", "train scores"),
        ("val", "loss", "validation"),
        ("val", "accumulated_loss", "validation"),  # acc... as a word's start only
        ("metrics", "accuracy", "metrics"),  # a group of scores keeps its window
    ],
)
def test_a_score_beside_losses_gets_its_groups_scores_window(group, name, title):
    """Accuracy (0-1) on a loss's axis (0-2.5) is a flat line: the run's page and the
    comparison split them by one rule."""
    assert layout.window_for(group, name).title == title


def test_a_runs_page_splits_accuracy_from_loss_as_the_comparison_does():
    series = [("train", "loss"), ("val", "loss"), ("val", "accuracy"), ("lr", "lr")]
    assert _windows(series) == [
        ("train losses", ["loss"]),
        ("validation", ["loss"]),
        ("validation scores", ["accuracy"]),
        ("learning rate", ["lr"]),
    ]
    titles = {series_title(key) for key in series}
    assert "validation scores: accuracy" in titles and "validation: loss" in titles


def _windows(series: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    return [(spec.title, sorted(lines)) for spec, lines, _ in RunDisplay._windows(_run(series))]


def test_kept_names_are_grouped_into_the_conventional_windows_and_shown_as_logged():
    # What Lightning, HF (TensorBoard's tags) and Accelerate's examples log, keys as stored.
    lightning = [("", "loss"), ("", "train_loss"), ("", "val_loss_step"), ("", "epoch")]
    hf = [("train", "loss"), ("train", "learning_rate"), ("eval", "loss"), ("train", "epoch")]
    accelerate = [("", "accuracy"), ("", "f1"), ("", "train_loss"), ("", "g_loss")]
    assert _windows(lightning + hf[:1]) == [
        ("train losses", ["loss", "train/loss", "train_loss"]),
        ("validation", ["val_loss_step"]),
        ("epoch", ["epoch"]),
    ]
    assert _windows(hf) == [
        ("train losses", ["loss"]),
        ("validation", ["eval/loss"]),
        ("learning rate", ["train/learning_rate"]),
        ("train/epoch", ["train/epoch"]),
    ]
    assert _windows(accelerate) == [
        ("train losses", ["g_loss", "train_loss"]),
        ("accuracy", ["accuracy"]),
        ("f1", ["f1"]),
    ]


def test_summaries_on_their_own_scale_keep_out_of_the_loss_windows():
    assert layout.window_for("eval", "samples_per_second").title == "throughput"
    assert layout.window_for("eval", "runtime").title == "eval/runtime"
    assert layout.window_for("train", "total_flos").title == "train/total_flos"
    assert layout.window_for("", "lr-Adam").title == "learning rate"


def test_a_store_written_before_names_were_kept_shows_as_before():
    history = read_store(V1_STORE, images=False)[0]
    assert _windows(sorted(history.keys())) == [
        ("train losses", ["loss"]),
        ("train scores", ["acc"]),
    ]
    old = [("train", "loss"), ("val", "loss"), ("lr", "lr"), ("throughput", "samples_per_s")]
    assert _windows([*old, ("scalars", "accuracy")]) == [
        ("train losses", ["loss"]),
        ("validation", ["loss"]),
        ("learning rate", ["lr"]),
        ("throughput", ["samples_per_s"]),
        ("scalars", ["accuracy"]),
    ]


def test_a_text_pane_is_as_tall_as_its_rows_and_wrapped_paragraphs():
    rows = markup.join(*(markup.row([f"option_{i}", i]) for i in range(30)))
    table = layout.text_pane_height(markup.element("table", rows), 560)
    assert table >= 30 * 22, "every row of 22 px shown"
    para = markup.element("p", "x" * 200)  # wraps at 560 px: more than one line
    assert layout.text_pane_height(para, 560) > layout.text_pane_height(
        markup.element("p", "x"), 560
    )
    assert layout.text_pane_height(markup.element("p", "&" * 60), 560) == layout.text_pane_height(
        markup.element("p", "a" * 60), 560
    ), "a character reference is one character"


def test_a_first_rows_panes_share_two_columns_so_that_widened_alike_they_make_one_row():
    margins = 2 * layout.PANE_MARGIN  # between three panes
    run_row = layout.STATUS_WIDTH + layout.VIEW_WIDTH + layout.OPTIONS_WIDTH + margins
    compare_row = layout.COMPARE_TABLE_WIDTH + 2 * layout.VIEW_WIDTH + margins
    assert run_row == compare_row == layout.TWO_COLUMNS
    assert layout.compare_row(100) == (layout.COMPARE_TABLE_WIDTH, layout.VIEW_WIDTH)
    for need in (700, 10_000):  # a wide runs table takes from the panes beside it, not past
        table, beside = layout.compare_row(need)
        assert table == min(need, table) and beside >= layout.MIN_CONTROLS_WIDTH
        assert table + 2 * beside + margins <= layout.TWO_COLUMNS


def test_a_text_pane_is_as_wide_as_its_widest_cells():
    wide = markup.row(["run-00001", "x" * 46])
    table = markup.element("table", markup.row(["run", "group"], "th"), wide)
    assert layout.text_pane_width(table) >= 55 * 8, "every character whole"
    note = markup.row(["y" * 500], "td", ' colspan="99"')  # "… 900 more runs": it may wrap
    assert layout.text_pane_width(markup.element("table", wide, note)) == layout.text_pane_width(
        markup.element("table", wide)
    ), "a spanning cell is left out"
