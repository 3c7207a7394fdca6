"""What a plot window sends visdom: its lines, trace states, colors, layout and messages.

:class:`~visualizer.panes.plotwindow.PlotWindow` decides when to append and when
to redraw; the pieces of the messages it sends, and what it remembers of each
trace on the server, are here.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from visualizer import layout
from visualizer.model.decimate import MIN_POINTS
from visualizer.model.series import Series
from visualizer.model.traces import band_traces, faint, line, spread
from visualizer.model.zoom import Zoom

from .view import ViewSettings

# Plotly's own colors, assigned per series so a series' two traces match.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


def series_colors(labels: Iterable[str]) -> dict[str, str]:
    """A color per trace label, from the label itself: the same live, replayed or reloaded.

    A label's color is its name's hash into :data:`PALETTE`; where two labels of one
    window would share one, the label sorted later takes the next free color.
    """
    colors: dict[str, str] = {}
    for label in sorted(labels):
        first = zlib.crc32(label.encode()) % len(PALETTE)
        free = [PALETTE[(first + i) % len(PALETTE)] for i in range(len(PALETTE))]
        free = [c for c in free if c not in colors.values()] or [PALETTE[first]]
        colors[label] = free[0]
    return colors


# A series with fewer points (validation once an epoch, a system metric's first samples) is
# sparse: drawn raw, not smoothed (a moving average over a few points ends visibly off the
# last value the tables show), and with a marker on each point (a single point draws no line).
SPARSE_POINTS = 50

# Relative time is shown in the largest unit the run's span fills (span bound, unit, seconds).
TIME_UNITS = ((180.0, "s", 1.0), (3 * 3600.0, "min", 60.0), (float("inf"), "h", 3600.0))


@dataclass(frozen=True)
class Line:
    """What a trace draws: a series, the wall time its relative time counts from, and for a
    group of runs the (min, max) band around its mean, a value per point of ``series``."""

    series: Series
    origin: float | None = None
    band: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class TraceState:
    """How much of a series one drawn trace shows."""

    sent: int  # series points represented on the server (an index into the series)
    shown: int  # raw points actually drawn after decimation (its smoothed trace draws as many)
    rewinds: int  # the series' rewind count when drawn
    origin: float | None  # where relative time started when drawn
    picked: tuple[int, int, int] | None = None  # a zoom's points when drawn (Pick.key)
    band: tuple[np.ndarray, np.ndarray] | None = None  # a group's band when drawn (None: a run)


@dataclass
class Plan:
    """One message for one window and the trace states it leaves on the server."""

    route: str  # visdom route: "events" (redraw) or "update" (append)
    msg: dict[str, Any]
    traces: dict[str, TraceState]
    redraw: bool


def trace_budget(per_trace: int, window_points: int | None, traces: int) -> int:
    """Points each of a window's ``traces`` draws: ``per_trace``, fewer where the window's
    ``window_points`` (None: no cap) shared by all its traces give each less; at least MIN_POINTS.
    """
    if window_points is None or traces <= 0:
        return per_trace
    return max(MIN_POINTS, min(per_trace, window_points // traces))


def time_unit(lines: dict[str, Line]) -> tuple[float, str, float]:
    """The unit relative times of ``lines`` are shown in: (span bound, unit, seconds)."""
    spans = [
        line.series.last_time - line.origin
        for line in lines.values()
        if line.origin is not None and line.series.last_time is not None
    ]
    span = max(spans, default=0.0)
    return next(unit for unit in TIME_UNITS if span < unit[0])


def plot_layout(
    spec: layout.WindowSpec, view: ViewSettings, unit: tuple[float, str, float], zoom: Zoom | None
) -> dict[str, Any]:
    """The plotly layout of a plot window: its title, legend, margins and axes."""
    x_axis: dict[str, Any] = {
        "step": {"title": "step", "type": "linear"},
        "relative": {"title": f"time since start ({unit[1]})", "type": "linear"},
        "wall": {"title": "wall time", "type": "date"},
    }[view.x_axis]
    if zoom is not None:  # a page opened later shows the zoom it draws
        x_axis |= {"range": zoom.drawn(unit[2]), "autorange": False}
    return {
        # Left-aligned: Plotly's toolbar sits at the top right, over a centered title.
        "title": {"text": spec.title, "x": 0.02, "xanchor": "left"},
        "showlegend": True,
        # Under the plot, never over the curves nor under the toolbar at the right.
        "legend": {"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top"},
        "margin": {"l": 60, "r": 40, "t": 50, "b": 50},
        # Upright at the right edge, so it never covers the title.
        "modebar": {"orientation": "v"},
        "xaxis": x_axis,
        "yaxis": {
            "title": spec.ylabel,
            "type": "log" if view.log_y else "linear",
            # Plotly's autorange, stretched down to 0: a user's zoom still works.
            **({"rangemode": "tozero"} if spec.from_zero and not view.log_y else {}),
        },
    }


def placeholder(spec: layout.WindowSpec, env: str) -> Plan:
    """A text pane in the window's place, so the page forgets the plot's zoom."""
    msg = {
        "data": [{"content": "redrawing for the new axes...", "type": "text"}],
        "win": spec.win,
        "eid": env,
        "opts": {"title": spec.title},
    }
    return Plan("events", msg, {}, redraw=True)


def line_traces(
    label: str,
    series_line: Line,
    raw: tuple[np.ndarray | slice, np.ndarray, np.ndarray],
    color: str,
    smooth: tuple[np.ndarray, np.ndarray] | None,
) -> list[dict[str, Any]]:
    """The traces of ``label``: its raw points ``(index, x, y)`` (faint under a smoothed trace
    ``(x, y)`` when given; dotted when sparse), a group's band around them."""
    index, x, y = raw
    sparse = len(series_line.series) < SPARSE_POINTS
    out = [line(label, x, y, faint(color) if smooth else color, not smooth, sparse)]
    if series_line.band is not None:  # a group: its band under its mean, whose hover reads both
        low, high = series_line.band[0][index], series_line.band[1][index]
        out = [*band_traces(label, x, low, high, color), spread(out[0], x, low, high)]
    if smooth:
        out.append(line(label, smooth[0], smooth[1], color, True) | {"meta": "smoothed"})
    return out
