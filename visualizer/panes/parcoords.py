"""The comparison's parallel coordinates: which config values go with a good metric.

An axis per config key that differs between the compared runs, but the key runs are
grouped by (a seed), and a last one for each run's best value of a metric, as the
comparison's table shows it (the ``--sort-by`` series, else the most logged one); a line
per run, colored by that metric (the best brightest). A key with a value that is not a
number is a categorical axis: its values in order, each at a whole number, named by
``ticktext``; a numeric axis spanning two decades or more is logarithmic. Values come
from a store: names and texts reach Plotly as text (visdom's client escapes them,
:func:`visualizer.markup.plot_strings`), and a run with a NaN or infinite value on some
axis is left out of the plot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from run_core.tags import tag_of
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.summary import best_is_highest, run_best, run_config

from .groups import varying_keys
from .hparams import MAX_COLUMNS, options_text
from .values import value_text

PARCOORDS_WIN = "compare_parcoords"
PARCOORDS_TITLE = "config and {tag} ({runs} runs)"  # the window's, also before it is drawn
PARCOORDS_SIZE = (600, 340)  # width, height: under the runs table
_MISSING = "-"  # a key a run lacks, on a categorical axis
LOG_DECADES = 2  # a numeric axis whose values span this many decades is logarithmic


def metric_of(runs: Sequence[RunData], sort_by: SeriesKey | None) -> SeriesKey | None:
    """The metric the plot colors by: ``sort_by`` when a run logged it, else the series with
    the most points over ``runs`` (the first by name among equals); None without series."""
    counts: dict[SeriesKey, int] = {}
    for run in runs:
        for key, series in run.series.items():
            counts[key] = counts.get(key, 0) + len(series)
    if sort_by is not None and sort_by in counts:
        return sort_by
    return min(counts, key=lambda key: (-counts[key], key), default=None)


def _number(value: object) -> float | None:
    """``value`` as a number when it is one (a bool is a category); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _axis(label: str, values: Sequence[object]) -> dict[str, Any]:
    """One axis over ``values`` (a run each; ``_MISSING`` where a run lacks the key)."""
    numbers = [_number(v) for v in values]
    if all(n is not None for n in numbers):
        return _numeric_axis(label, [n for n in numbers if n is not None])
    texts = [_MISSING if v is _MISSING else options_text({"v": v})["v"] for v in values]
    order = sorted(set(zip(numbers, texts, strict=True)), key=_category_rank)
    ticks = list(dict.fromkeys(text for _, text in order))
    at = {text: i for i, text in enumerate(ticks)}
    return {
        "label": label,
        "values": [at[t] for t in texts],
        "tickvals": list(range(len(ticks))),
        "ticktext": ticks,
    }


def _numeric_axis(label: str, numbers: list[float]) -> dict[str, Any]:
    """A numeric axis; logarithmic when its values are positive and span :data:`LOG_DECADES`
    decades or more (a learning rate's 1e-4..0.3: linear, 7 of 10 values sat in its bottom
    15%). Plotly's parallel coordinates have no log axis: the values are their log10, the
    ticks each power of ten, named by its value."""
    low, high = min(numbers), max(numbers)
    if low <= 0 or high < low * 10**LOG_DECADES:
        return {"label": label, "values": numbers}
    powers = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    return {
        "label": f"{label} (log)",
        "values": [math.log10(n) for n in numbers],
        "tickvals": list(powers),
        "ticktext": [value_text(10.0**power, 20) for power in powers],
    }


def _in_colors(names: list[str], run_colors: dict[str, str]) -> dict[str, Any]:
    """A parcoords ``line`` drawing each of runs ``names`` in its color: a value per color on a
    colorscale with a stop at each (Plotly's lines take a number, not a color)."""
    palette = list(dict.fromkeys(run_colors.get(name, "#7f7f7f") for name in names))
    at = {color: i for i, color in enumerate(palette)}
    top = max(len(palette) - 1, 1)
    scale = [[i / top, color] for i, color in enumerate(palette)]
    if len(palette) == 1:
        scale.append([1.0, palette[0]])
    color = [at[run_colors.get(name, "#7f7f7f")] for name in names]
    return {"color": color, "colorscale": scale, "cmin": 0, "cmax": top, "showscale": False}


def _category_rank(item: tuple[float | None, str]) -> tuple[int, float, str]:
    """Numbers first, by value; then texts; a missing value last."""
    number, text = item
    if text == _MISSING:
        return 2, 0.0, text
    return (0, number, text) if number is not None else (1, 0.0, text)


def parcoords_message(
    runs: Sequence[RunData],
    sort_by: SeriesKey | None,
    env: str,
    descending: bool = False,
    group_by: str = "",
    run_colors: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """The parallel-coordinates window's message; None when nothing varies or nothing is logged.
    The ``group_by`` key has no axis: the runs of a group differ by it alone (a seed). With
    ``run_colors`` (run name -> its group's color in the line plots) a line is in its run's
    color, else colored by the metric."""
    metric = metric_of(runs, sort_by)
    configs = {run.name: run_config(run) for run in runs}
    differing = [key for key in varying_keys(list(configs.values())) if key != group_by]
    # As many axes as the comparison's table has columns: 12,000 differing options made a
    # 4 MB message no one could read as axes.
    keys = differing[:MAX_COLUMNS]
    if metric is None or not keys:
        return None
    rows = []
    for run in sorted(runs, key=lambda r: r.name):
        config, value = configs[run.name], run_best(run, metric, descending)
        cells = [config.get(key, _MISSING) for key in keys]
        numbers = [n for n in (_number(c) for c in cells) if n is not None]
        if value is None or not all(math.isfinite(n) for n in [*numbers, value]):
            continue  # NaN or inf: this run has no place on some axis
        rows.append((cells, value, run.name))
    if not rows:
        return None
    tag = tag_of(*metric)
    dimensions = [_axis(key, [r[0][i] for r in rows]) for i, key in enumerate(keys)]
    values = [value for _, value, _ in rows]
    dimensions.append({"label": f"{tag} (best)", "values": values})
    by_metric = {
        "color": values,
        "colorscale": "Viridis",
        "reversescale": not best_is_highest(tag, descending),  # the best run is the brightest
        "showscale": True,
        "colorbar": {"title": tag},
    }
    names = [name for *_, name in rows]  # each line's run: the page's hover highlights it
    line = _in_colors(names, run_colors) if run_colors else by_metric
    trace = {"type": "parcoords", "dimensions": dimensions, "line": line, "customdata": names}
    title = PARCOORDS_TITLE.format(tag=tag, runs=len(rows))
    if len(differing) > len(keys):
        title += f": the first {len(keys)} of {len(differing):,} options that differ"
    return {
        "data": [trace],
        "layout": {
            "title": {"text": title, "x": 0.02},
            "margin": {"l": 60, "r": 110, "t": 100, "b": 30},
        },
        "win": PARCOORDS_WIN,
        "eid": env,
        "opts": {"title": title, "width": PARCOORDS_SIZE[0], "height": PARCOORDS_SIZE[1]},
    }
