"""Which window shows a series, and in what order a run's windows come."""

from __future__ import annotations

from snapshot_store.reader import Update
from visualizer import layout
from visualizer.display import RunDisplay
from visualizer.rundata import RunData


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
    assert layout.window_for("val", "loss") == layout.window_for("val", "accuracy")
    assert layout.window_for("system", "a").win != layout.window_for("system", "b").win
