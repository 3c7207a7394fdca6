"""What a snapshot file shows, built from the viewer's own model.

The runs are found and listed as the Api and ``export --kind runs`` find them
(:func:`~visualizer.api.client.read_runs`, the runs table's
:func:`~visualizer.api.table.run_row`, ``--runs`` searched by :mod:`visualizer.patterns`);
each run's store is read whole by the store reader into a
:class:`~visualizer.model.rundata.RunData` and laid out in windows by the live page's own
rule (:func:`~visualizer.panes.display.run_windows`, folded by
:func:`~visualizer.panes.fold.fold_run`), with its colors, time unit and Plotly layouts,
and its newest images (:mod:`.images`). With more than one run, the comparison too, of
the runs the live one would pick (:func:`~visualizer.runset.compared`): a window a series,
a line a run in the run's color (:func:`~visualizer.panes.compare.compare_lines`,
:func:`~visualizer.panes.compare.window_spec`, :func:`~visualizer.panes.compare.run_color`),
runs that differ only by ``--group-by`` (the seed, as live) drawn as their mean and
min-max band (:class:`~visualizer.panes.groups.GroupCurves`). Every stored point goes in
once (:mod:`.columns`; a run's window and the comparison refer to the same columns); the
page smooths and decimates them by the viewer's rules (plots.js mirrors
:mod:`visualizer.model.smoothing`, :mod:`visualizer.model.decimate` and the zoom's
:func:`~visualizer.model.zoom.pick` and :func:`~visualizer.model.zoom.sample`; the
Chromium test holds the two to the same points).

Text from a store reaches the page as JSON data; what Plotly draws (titles, axis titles,
trace names) is escaped for Plotly, which reads its strings as a little HTML.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from run_core.tags import tag_of
from snapshot_store.alerting.sent import sent_alerts
from snapshot_store.read.store_reader import read_store
from visualizer import layout
from visualizer.api.client import read_runs
from visualizer.api.run import ApiRun
from visualizer.api.table import run_row, runs_columns
from visualizer.markup import escaped, plot_strings
from visualizer.model.decimate import MIN_POINTS, check_max_points
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.smoothing import DEFAULT_SMOOTHING, check_smoothing
from visualizer.model.traces import BAND_ALPHA, BAND_HOVER, MARKER_SIZE, RAW_ALPHA, faint
from visualizer.panes.compare import (
    COMPARE_WINDOW_POINTS,
    DEFAULT_COMPARE,
    SMOOTHED_RUNS,
    Selection,
    compare_lines,
    run_color,
    window_spec,
)
from visualizer.panes.display import DEFAULT_MAX_POINTS, run_windows
from visualizer.panes.fold import cap, fold_run
from visualizer.panes.groups import DEFAULT_GROUP_BY, GroupCurves, group_runs
from visualizer.panes.parcoords import PARCOORDS_SIZE, parcoords_message
from visualizer.panes.plotmessage import SPARSE_POINTS, Line, plot_layout, series_colors, time_unit
from visualizer.panes.view import X_AXES, ViewSettings
from visualizer.patterns import searcher
from visualizer.runset import compared
from visualizer.sources.catalog import read_error

from .columns import packed
from .images import image_content

Json = dict[str, Any]
# A snapshot of at most this many runs gives each its own section; past it (a sweep), only
# the compared runs have one, the rest are rows of the runs table: every point of 10,000
# runs would make a file of hundreds of MB.
SECTIONS_OF_ALL = 100


def build(
    root: str,
    runs: str = "",
    s3_client: Any = None,
    max_points: int = DEFAULT_MAX_POINTS,
    smoothing: float = DEFAULT_SMOOTHING,
    group_by: str = DEFAULT_GROUP_BY,
    compare: int = DEFAULT_COMPARE,
) -> Json:
    """The page's data for the runs at ``root`` whose name ``runs`` (a regex; "": all) finds;
    the ``compare`` most recently updated of them compared, grouped by ``group_by`` ("": no
    groups), as the live comparison picks and groups them.

    FileNotFoundError (one line) when ``root`` holds no run or ``runs`` matches none.
    """
    check_max_points(max_points)
    check_smoothing(smoothing)
    found = read_runs(root, s3_client)
    search = searcher(runs)
    chosen = [run for run in found if search(run.name)]
    if not chosen:
        raise FileNotFoundError(
            f"--runs {runs!r} matches none of the {len(found)} runs at {root}: "
            "leave it out for all of them, or name one of theirs"
        )
    columns = runs_columns(chosen)
    packed = PackedSeries()
    shown, sections, read = run_sections(chosen, packed, compare)
    at = {id(run): index for index, run in enumerate(shown)}
    return {
        "source": root,
        "made": time.time(),
        "view": {
            "smoothing": smoothing,
            "maxPoints": max_points,
            "minPoints": MIN_POINTS,
            "sparsePoints": SPARSE_POINTS,
            "markerSize": MARKER_SIZE,
            "rawAlpha": RAW_ALPHA,
            "bandHover": BAND_HOVER,
            "axes": X_AXES,
        },
        "table": {
            "columns": list(columns),
            "rows": [[json_cell(v) for v in row] for row in zip(*columns.values(), strict=True)],
            "sections": [at.get(id(run)) for run in chosen],  # a row's section, else null
        },
        "runs": sections,
        "comparison": comparison(read, packed, group_by)
        | {"of": len(chosen), "compared": len(read)}
        if len(read) > 1
        else None,
        "series": packed.columns,
    }


def run_sections(
    chosen: list[ApiRun], packed: PackedSeries, compare: int
) -> tuple[list[ApiRun], list[Json], list[RunData]]:
    """The runs given a section (all, or past :data:`SECTIONS_OF_ALL` the compared ones),
    their sections, and the ``compare`` runs compared, read (as the live comparison picks)."""
    picked = {id(s) for s in compared([run.run_summary for run in chosen], Selection(), compare)}
    shown = [
        run for run in chosen if len(chosen) <= SECTIONS_OF_ALL or id(run.run_summary) in picked
    ]
    sections = [run_content(run, packed) for run in shown]
    read = [
        data
        for run, (_, data) in zip(shown, sections, strict=True)
        if data is not None and id(run.run_summary) in picked
    ]
    return shown, [content for content, _ in sections], read


def json_cell(value: Any) -> Any:
    """A table value as JSON holds it: a number, text, true/false or null (NaN: its text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


class PackedSeries:
    """Every series of the snapshot, packed once (:func:`.columns.packed`); lines refer to
    one by its index in :attr:`columns`."""

    def __init__(self) -> None:
        self.columns: list[Json] = []
        self._ids: dict[tuple[str, SeriesKey], int] = {}

    def ref(self, owner: str, key: SeriesKey, line: Line) -> int:
        """The index of ``owner``'s (a run's, a group's) series ``key`` drawn as ``line``,
        packed the first time it is asked for (a group's with its band's low and high)."""
        at = self._ids.get((owner, key))
        if at is None:
            at = self._ids[(owner, key)] = len(self.columns)
            series = line.series
            columns = {
                "steps": packed(series.steps()),
                "values": packed(series.values()),
                "times": packed(series.times(slice(None))),
            }
            if line.band is not None:
                columns |= {"low": packed(line.band[0]), "high": packed(line.band[1])}
            self.columns.append(columns)
        return at


def read_run(name: str, source: Any) -> RunData:
    """The run's store read whole into the viewer's model."""
    history, _reader, update = read_store(source)
    keys = history.keys()
    update.scalars = [(group, tag, *history.series((group, tag))) for group, tag in keys]
    run = RunData(name)
    run.apply(update)
    return run


def run_content(run: ApiRun, packed: PackedSeries) -> tuple[Json, RunData | None]:
    """One run's section (its name, state, step, config, summary and plot windows), and
    the run as read (None when its store can not be read)."""
    row = run_row(run)
    out: Json = {
        "name": run.name,
        "state": run.state,
        "step": run.step,
        "config": {k[7:]: json_cell(v) for k, v in row.items() if k.startswith("config.")},
        "summary": {k[8:]: json_cell(v) for k, v in row.items() if k.startswith("summary.")},
        # what the run's own writer told people (its rules: docs/viewer.md), as its status keeps it
        "alerts": [
            {"event": a["event"], "detail": a["detail"], "time": a["time"]}
            for a in sent_alerts(run.run_summary.status)
        ],
        "windows": [],
        "images": [],
        "imagesLeftOut": 0,
        "error": None,
        "note": None,
    }
    try:
        data = read_run(run.name, run.source)
    except Exception as err:  # a hostile or broken store: the others are still shown
        out["error"] = read_error(err)
        return out, None
    windows, folding = fold_run(run_windows(data))
    if folding is not None:
        out["note"] = (
            f"{folding.windows:,} plot windows are too many for one page: groups that share a "
            f"prefix are drawn together, {folding.series - folding.hidden:,} of "
            f"{folding.series:,} series"
        )
    for spec, lines, keys in windows:
        refs = {label: packed.ref(run.name, keys[label], line) for label, line in lines.items()}
        tags = {label: tag_of(*keys[label]) for label in lines}
        out["windows"].append(window_content(spec, lines, (refs, tags), series_colors(lines)))
    out["images"], out["imagesLeftOut"] = image_content(data)
    return out, data


def comparison(runs: list[RunData], packed: PackedSeries, group_by: str) -> Json:
    """The comparison: a window a series (the first MAX_WINDOWS), a line a run in its color,
    or a group's mean and band in its first run's."""
    ordered = sorted(runs, key=lambda run: run.name)
    run_colors = {run.name: run_color(index) for index, run in enumerate(ordered)}
    groups = group_runs(ordered, group_by)
    colors = {group.label: run_colors[group.runs[0]] for group in groups}
    by_run = compare_lines(ordered)
    by_key = GroupCurves().lines(by_run, groups, {run.name: run for run in ordered})
    specs = {key: window_spec(key, len(by_run[key]), len(lines)) for key, lines in by_key.items()}
    keys, left_out = cap(sorted(by_key, key=lambda key: (specs[key].order, key)))
    out = []
    for key in keys:
        lines = by_key[key]
        # A group's curve is its own series: its label can not be a run's (group_runs).
        refs = {label: packed.ref(label, key, line) for label, line in lines.items()}
        tags = dict.fromkeys(lines, tag_of(*key))
        crowded = len(lines) > SMOOTHED_RUNS
        points = COMPARE_WINDOW_POINTS // (2 if crowded else 1)
        shown = window_content(specs[key], lines, (refs, tags), colors)
        out.append(shown | {"windowPoints": points, "crowded": crowded})
    together = [
        {"label": group.label, "runs": list(group.runs)} for group in groups if len(group.runs) > 1
    ]
    return {
        "windows": out,
        "leftOut": left_out,
        "groups": together,
        "parcoords": parcoords(ordered),
    }


def parcoords(runs: list[RunData]) -> Json | None:
    """The live comparison's parallel coordinates of ``runs`` (config keys that differ, and
    the most logged series' last value), its strings escaped for Plotly; None without one."""
    message = parcoords_message(runs, None, "")
    if message is None:
        return None
    shown = plot_strings(message)
    return {"data": shown["data"], "layout": shown["layout"] | {"height": PARCOORDS_SIZE[1]}}


def window_content(
    spec: layout.WindowSpec,
    lines: dict[str, Line],
    refs: tuple[dict[str, int], dict[str, str]],
    colors: dict[str, str],
) -> Json:
    """One plot window: its Plotly layout for each x axis, and its lines (``refs``: each
    label's packed series and tag)."""
    unit = time_unit(lines)
    shown = replace(spec, title=str(escaped(spec.title)), ylabel=str(escaped(spec.ylabel)))
    return {
        "title": spec.title,
        "height": spec.height or layout.PLOT_SIZE[1],
        "unitSeconds": unit[2],
        "layouts": {
            axis: plot_layout(shown, ViewSettings(x_axis=axis), unit, None) for axis in X_AXES
        },
        "windowPoints": None,
        "crowded": False,
        "lines": [
            {
                "label": str(escaped(label)),
                "tag": refs[1][label],
                "color": colors[label],
                "faint": faint(colors[label]),
                "origin": line.origin,
                "series": refs[0][label],
                "band": faint(colors[label], BAND_ALPHA) if line.band is not None else None,
            }
            for label, line in lines.items()
        ],
    }
