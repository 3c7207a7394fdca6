"""The comparison's parallel coordinates: an axis per varying config key and the metric."""

from __future__ import annotations

import math

from visualizer.markup import plot_strings
from visualizer.model.rundata import RunData
from visualizer.model.series import Series
from visualizer.panes.parcoords import PARCOORDS_WIN, metric_of, parcoords_message


def run(name: str, options: dict, loss: float, steps: int = 3) -> RunData:
    data = RunData(name)
    data.meta = {"options": options}
    series = data.series[("val", "loss")] = Series()
    series.extend(range(steps), [loss] * steps)
    return data


def test_an_axis_per_varying_key_and_the_metric_a_line_per_run_colored_by_it():
    runs = [
        run("a", {"lr": 0.1, "seed": 1, "batch": 8}, 0.5),
        run("b", {"lr": 0.01, "seed": 1, "batch": 8}, 0.25),
    ]
    msg = parcoords_message(runs, None, "env")
    assert msg is not None and (msg["win"], msg["eid"]) == (PARCOORDS_WIN, "env")
    (trace,) = msg["data"]
    assert trace["type"] == "parcoords"
    assert [(d["label"], d["values"]) for d in trace["dimensions"]] == [
        ("lr", [0.1, 0.01]),
        ("val/loss (best)", [0.5, 0.25]),
    ]
    assert trace["line"]["color"] == [0.5, 0.25]
    assert trace["line"]["reversescale"] is True, "a loss: the smallest is the brightest"
    assert trace["customdata"] == ["a", "b"], "each line's run, for the page's hover"


def test_a_categorical_key_is_a_numeric_axis_named_by_its_ticks():
    runs = [
        run("a", {"opt": "sgd"}, 1.0),
        run("b", {"opt": "adam"}, 2.0),
        run("c", {"opt": "sgd"}, 3.0),
        run("d", {}, 4.0),
    ]
    axis = parcoords_message(runs, None, "env")["data"][0]["dimensions"][0]
    assert axis["ticktext"] == ["adam", "sgd", "-"]
    assert axis["tickvals"] == [0, 1, 2]
    assert axis["values"] == [1, 0, 1, 2]


def test_names_and_texts_reach_plotly_escaped():
    evil = "<img src=x onerror=alert(1)>"
    runs = [run("a", {evil: evil}, 1.0), run("b", {evil: 1}, 2.0)]
    sent = plot_strings(parcoords_message(runs, None, "env"))
    axis = sent["data"][0]["dimensions"][0]
    assert axis["label"] == "&lt;img src=x onerror=alert(1)&gt;"
    assert all("<" not in text for text in axis["ticktext"])


def test_a_run_with_a_nan_or_inf_value_is_left_out():
    runs = [
        run("a", {"lr": 0.1}, 1.0),
        run("b", {"lr": math.inf}, 2.0),
        run("c", {"lr": 0.3}, math.nan),
        run("d", {"lr": 0.4}, 4.0),
    ]
    trace = parcoords_message(runs, None, "env")["data"][0]
    assert trace["dimensions"][0]["values"] == [0.1, 0.4]
    assert trace["line"]["color"] == [1.0, 4.0]


def test_nothing_varies_nothing_drawn():
    assert (
        parcoords_message([run("a", {"lr": 1}, 1.0), run("b", {"lr": 1}, 2.0)], None, "e") is None
    )


def test_the_metric_is_the_sort_series_else_the_most_logged():
    a, b = run("a", {}, 1.0, steps=2), run("b", {}, 1.0, steps=2)
    a.series[("train", "loss")] = Series()
    a.series[("train", "loss")].extend(range(10), [1.0] * 10)
    assert metric_of([a, b], None) == ("train", "loss")
    assert metric_of([a, b], ("val", "loss")) == ("val", "loss")
    assert metric_of([a, b], ("val", "absent")) == ("train", "loss")


def test_the_metric_axis_is_each_runs_best_value_as_the_comparisons_table_shows():
    runs = [run("a", {"lr": 0.1}, 0.5), run("b", {"lr": 0.01}, 0.25)]
    runs[0].series[("val", "loss")].extend([3, 4], [0.125, 0.75])  # best 0.125, last 0.75
    (trace,) = parcoords_message(runs, None, "env")["data"]
    assert trace["dimensions"][-1] == {"label": "val/loss (best)", "values": [0.125, 0.25]}
    higher = parcoords_message(runs, ("val", "loss"), "env", descending=True)["data"][0]
    assert higher["dimensions"][-1]["values"] == [0.75, 0.25]
    assert higher["line"]["reversescale"] is False, "descending: the largest is the brightest"


def test_an_axis_spanning_two_decades_is_logarithmic_named_by_its_powers_of_ten():
    """Issue 48: lr on a linear axis put 7 of 10 values in its bottom 15%."""
    rates = [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.05, 0.1, 0.3, 0.0005]
    runs = [run(f"r{i}", {"lr": lr, "width": 64 + i}, 1.0 + i) for i, lr in enumerate(rates)]
    lr, width, _ = parcoords_message(runs, None, "env")["data"][0]["dimensions"]
    assert lr["label"] == "lr (log)" and lr["values"][2] == math.log10(0.001)
    assert lr["tickvals"] == [-4, -3, -2, -1, 0]
    assert lr["ticktext"] == ["0.0001", "0.001", "0.01", "0.1", "1"]
    assert width == {"label": "width", "values": [64.0 + i for i in range(10)]}, "linear"


def test_the_group_by_keys_axis_is_left_out():
    runs = [run(f"r{i}", {"lr": 0.1 * (i % 2 + 1), "seed": i}, 1.0) for i in range(4)]
    labels = [d["label"] for d in parcoords_message(runs, None, "e")["data"][0]["dimensions"]]
    assert labels == ["lr", "seed", "val/loss (best)"]
    grouped = parcoords_message(runs, None, "e", group_by="seed")["data"][0]["dimensions"]
    assert [d["label"] for d in grouped] == ["lr", "val/loss (best)"]
    only_seed = [run(f"r{i}", {"seed": i}, 1.0) for i in range(3)]
    assert parcoords_message(only_seed, None, "e", group_by="seed") is None
