"""Ten groups and more told apart: by color, then by dash, the same in every window and in the
parallel coordinates, listed in their values' order (issue 48)."""

from __future__ import annotations

import numpy as np

from visualizer.model.rundata import RunData
from visualizer.model.series import Series
from visualizer.model.traces import BASELINE_COLOR, line
from visualizer.panes.compare import CompareDisplay, Selection
from visualizer.panes.groups import group_runs
from visualizer.panes.palette import STYLES, assign_colors, run_color
from visualizer.panes.parcoords import PARCOORDS_WIN
from visualizer.panes.plotmessage import PALETTE
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient

# The sweep, its rates in the order a string sort gave its legend.
RATES = (0.01, 0.03, 0.05, 0.1, 0.3, 0.0001, 0.0003, 0.001, 0.003, 0.0005)


def sweep(seeds: int = 4) -> list[RunData]:
    runs = []
    for index, lr in enumerate(RATES):  # by name, in the order
        for seed in range(seeds):
            run = RunData(f"run{index * seeds + seed:02d}")
            run.meta = {"options": {"lr": lr, "seed": seed, "batch": 32}}
            run.series[("train", "loss")] = series = Series()
            series.extend(range(5), (np.arange(5) * -lr + 1 + seed / 10).tolist())
            runs.append(run)
    return runs


def test_thirty_styles_apart_by_color_then_dash_past_them_distinct_hues():
    assert len(set(STYLES[:10])) == 10 and len(set(STYLES)) == 30
    dashes = [line("x", np.zeros(1), np.zeros(1), c, True)["line"].get("dash") for c in STYLES]
    assert dashes == [None] * 10 + ["dash"] * 10 + ["dot"] * 10
    assert len({run_color(i) for i in range(100)}) == 100


def test_a_label_keeps_its_color_a_new_one_takes_a_free_one_the_baseline_is_black():
    colors: dict[str, str] = {}
    assign_colors(["a", "b"], colors, {})
    assert colors == {"a": STYLES[0], "b": STYLES[1]}
    assign_colors(["new", "b", "base"], colors, {"base": BASELINE_COLOR})
    assert colors["b"] == STYLES[1] and colors["new"] == STYLES[0]
    assert colors["base"] == BASELINE_COLOR


def test_groups_are_listed_by_their_values_numbers_as_numbers():
    labels = [g.label for g in group_runs(sweep(2), "seed")]
    rates = sorted(RATES)
    assert labels == [f"lr={lr:g} (2 runs)" for lr in rates], labels


def test_ten_groups_draw_in_ten_colors_alike_in_every_window_and_the_parcoords():
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    client.events.stop()
    sent: list[dict] = []
    client.post = lambda route, msg: sent.append(msg) or ""  # type: ignore[method-assign]
    display = CompareDisplay(client, "sweep_compare", 1000, selection=Selection(count=40))
    runs = sweep()
    display.draw(runs, now=0.0)
    window = next(m for m in sent if m.get("win") == "compare_train_loss")
    means = [t for t in window["data"] if t.get("showlegend")]  # a mean a group
    assert [t["name"] for t in means] == [f"lr={lr:g} (4 runs)" for lr in sorted(RATES)]
    colors = {t["name"]: t["line"]["color"] for t in means}
    assert set(colors.values()) == set(PALETTE), "ten groups: Plotly's ten colors, each once"
    (coords,) = next(m for m in sent if m.get("win") == PARCOORDS_WIN)["data"]
    scale = {i: c for i, (_, c) in enumerate(coords["line"]["colorscale"])}
    drawn = [scale[i] for i in coords["line"]["color"]]  # a line per run, by name
    groups = {run: g.label for g in group_runs(runs, "seed") for run in g.runs}
    assert drawn == [colors[groups[run.name]] for run in sorted(runs, key=lambda r: r.name)]
