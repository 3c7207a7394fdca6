"""Which runs are compared (and so followed), and which leave memory past the budget."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from snapshot_store.format.summary import RunSummary, SeriesStats
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.panes.compare import Selection
from visualizer.panes.run_rows import opening_view, select
from visualizer.panes.screen import Screen
from visualizer.runset import RunSet, compared, over_budget
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient


def _summary(name, updated, loss=None, acc=None):
    series = {}
    if loss is not None:
        series["val/loss"] = SeriesStats(3, 2, loss, loss, loss + 1)
    if acc is not None:
        series["val/acc"] = SeriesStats(3, 2, acc, acc - 0.1, acc)
    return RunSummary(name, updated=updated, series=series)


def test_the_most_recent_runs_are_compared_by_default():
    runs = [_summary(f"r{i}", updated=float(i)) for i in range(10)]
    assert [s.name for s in compared(runs, Selection(), 3)] == ["r9", "r8", "r7"]


def test_with_sort_by_the_best_runs_are_compared_those_without_it_last():
    runs = [
        _summary("a", 1, loss=0.5, acc=0.7),
        _summary("b", 2, loss=0.2, acc=0.9),
        _summary("c", 3),
        _summary("d", 4, loss=float("nan"), acc=0.1),
    ]
    by_loss = compared(runs, Selection(sort_by=("val", "loss")), 4)
    assert [s.name for s in by_loss] == ["b", "a", "c", "d"]
    by_acc = compared(runs, Selection(sort_by=("val", "acc")), 2)
    assert [s.name for s in by_acc] == ["b", "a"], "accuracy: the largest is best"


def test_a_finished_sweep_without_sort_by_compares_the_best_by_the_tables_series():
    """Issue 48: a finished sweep compared its most recently updated runs, the worst there."""
    runs = [_summary(f"r{i}", updated=float(i), loss=float(i)) for i in range(10)]
    for run in runs:
        run.state = "finished"
    assert [s.name for s in compared(runs, Selection(), 3)] == ["r0", "r1", "r2"]
    runs[5].state = "running"  # a live sweep: the most recent
    assert [s.name for s in compared(runs, Selection(), 3)] == ["r9", "r8", "r7"]


def test_the_runs_table_opens_sorted_by_sort_by_the_best_first():
    screen = Screen(VisdomClient(VisdomEndpoint()), "runs", max_points=10)
    assert screen.index.view.sort == "last update", "without --sort-by: by last update"
    selection = Selection(sort_by=("val", "acc"))
    RunSet(None, screen, selection, env_of=str, schedule=lambda remote: None)  # type: ignore[arg-type]
    view = screen.index.view
    assert (view.sort, view.series, view.descending) == ("best value", "val/acc", True)
    runs = [_summary("a", 1, acc=0.5), _summary("b", 2, acc=0.9), _summary("c", 3)]
    assert [s.name for s in select(runs, view, "val/acc", 0.0)] == ["b", "a", "c"]
    assert opening_view(("val", "loss")).descending is False, "a loss: the smallest first"


@dataclass
class _Spec:
    name: str


@dataclass
class _Feed:
    spec: _Spec
    memory: int
    opened: float


def test_past_the_budget_the_least_recently_opened_go_and_the_compared_stay():
    feeds = [
        _Feed(_Spec("compared"), 100, 0.0),
        _Feed(_Spec("old"), 100, 10.0),
        _Feed(_Spec("newer"), 100, 20.0),
        _Feed(_Spec("just opened"), 100, 99.0),
    ]
    gone = over_budget(feeds, {"compared"}, budget=250, now=100.0)  # type: ignore[arg-type]
    assert [f.spec.name for f in gone] == ["old", "newer"]
    assert over_budget(feeds, set(), budget=1000, now=100.0) == []  # type: ignore[arg-type]


@pytest.mark.integration
def test_runs_opened_from_the_page_leave_memory_and_visdom_once_past_the_budget(
    tmp_path, visdom_server, reader, run_name
):
    write_small_runs(tmp_path / run_name, 6)
    with following(
        tmp_path / run_name, visdom_server.endpoint, env=run_name, compare=2,
        memory_budget_mb=0.0001,  # ~100 bytes: any run opened from the page is past it
    ) as follower:  # fmt: skip
        wait_until(lambda: len(follower.known) == 6 and len(follower.feeds) == 2, timeout=30)
        kept = set(follower.feeds)  # the compared runs
        opened = sorted(set(follower.known) - kept)[:3]
        for name in opened:
            drawn = follower.want(name)
            assert drawn is not None and drawn.wait(30), f"{name} was not drawn"
            # Test-side data: opened "now" for as long as the test runs, whatever its pace.
            follower.feeds[name].opened = time.monotonic() + 3600
        envs = {name: follower.env_of(name) for name in follower.known}
        assert all(reader.windows(envs[name]) for name in opened)
        old, recent = opened[:2], opened[2]
        for age, name in enumerate(old):  # opened long ago: past their grace time
            follower.feeds[name].opened = time.monotonic() - 100 + age
        wait_until(lambda: set(follower.feeds) == kept | {recent}, timeout=30)
        wait_until(lambda: not {envs[name] for name in old} & set(reader.envs()), timeout=30)
        assert all(reader.windows(envs[name]) for name in [*kept, recent])
