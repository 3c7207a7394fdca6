"""Zoom to full resolution: a plot's x range, and the stored points drawn for it.

A window shows at most a budget of points per trace (``--max-points``), the
whole run min/max decimated. When a person zooms a plot (a drag, the toolbar,
``Plotly.relayout``), the page reports the plot's new x range as a pane event,
:data:`ZOOM_EVENT` (sent by visdom's page script as mended in
:mod:`visualizer.server.page`); the window then draws only the points in that
range, taken from every point the visualizer holds in memory: all of them when
they fit the budget, else decimated again, so a zoom shows what is under the
overview. A double-click (autorange) reports no range, and the window draws the
whole run again.

A :class:`Zoom` is kept in the axis' own terms (steps; seconds since the run's
start; seconds since the epoch), so a relative-time axis that changes its unit
as the run grows keeps showing the same stretch of the run.
"""

from __future__ import annotations

import math
import reprlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from visualizer.server.page import (
    ZOOM_EVENT as ZOOM_EVENT,  # the page's event, named where it is sent
)

from .decimate import decimate_indices
from .series import Series
from .traces import epoch_seconds, local_ms

# The x ranges a zoom can hold, in the axis' own terms (see Zoom): steps are int64; wall
# time the years 1 to 9999 (Python's datetime; Plotly's date axis spans more); relative
# time at most that span either way. A page's zoom past them is clamped to them.
WALL_LIMITS = (-62_135_596_800.0, 253_402_300_799.0)
_WALL_SPAN = WALL_LIMITS[1] - WALL_LIMITS[0]
AXIS_LIMITS = {
    "step": (-(2.0**63), 2.0**63),
    "relative": (-_WALL_SPAN, _WALL_SPAN),
    "wall": WALL_LIMITS,
}


@dataclass(frozen=True)
class Zoom:
    """An x range zoomed to: steps, seconds since the start, or wall seconds (per ``axis``)."""

    axis: str  # a key of visualizer.panes.view.X_AXES
    lo: float
    hi: float

    def drawn(self, unit_s: float) -> list[float]:
        """The range as the plot's axis draws it (``unit_s``: seconds per relative-time unit)."""
        if self.axis == "relative":
            return [self.lo / unit_s, self.hi / unit_s]
        if self.axis == "wall":
            return local_ms(np.array([self.lo, self.hi])).tolist()
        return [self.lo, self.hi]


def zoom_of(event: dict[str, Any], axis: str, unit_s: float) -> Zoom | None:
    """The zoom a page ``event`` reports on an ``axis`` drawn in units of ``unit_s`` seconds.

    None: the whole run (autorange). Total over what a page can send: ValueError when
    the event is not a range of two numbers (NaN included); an end past what the axis
    can show (:data:`AXIS_LIMITS`) is clamped to it, and a range empty once clamped
    is a ValueError too.
    """
    if "range" not in event:
        raise ValueError("the event carries no x range")
    bounds = event["range"]
    if bounds is None:
        return None
    try:
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ValueError
        lo, hi = sorted(_number(b) for b in bounds)
    except ValueError:
        # reprlib: the page's value may be long or deeply nested
        raise ValueError(f"an x range is two numbers, not {reprlib.repr(bounds)}") from None
    low, high = AXIS_LIMITS[axis]
    if axis == "relative":
        lo, hi = lo * unit_s, hi * unit_s  # past the floats: +-inf, clamped below
    elif axis == "wall":
        # The local clock converts only the times it can show (OverflowError, OSError past them).
        lo, hi = (epoch_seconds(_clamp(b, low * 1000.0, high * 1000.0)) for b in (lo, hi))
    lo, hi = _clamp(lo, low, high), _clamp(hi, low, high)
    if not lo < hi:
        raise ValueError(f"an x range of some width the axis can show, not {reprlib.repr(bounds)}")
    return Zoom(axis, lo, hi)


def _number(value: object) -> float:
    """One end of a page's range as a float, +-inf past the floats; ValueError if no number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError
    try:
        number = float(value)
    except OverflowError:  # JSON carries integers of any size
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        raise ValueError
    return number


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


@dataclass(frozen=True)
class Pick:
    """The points of one series a zoom draws: indices in step order, and which lie outside."""

    index: np.ndarray
    edge: (
        np.ndarray
    )  # bool per index: a neighbour just outside the range (the line reaches the edge)

    def key(self) -> tuple[int, int, int]:
        """What a redraw of this pick would show, in brief: equal keys draw the same points."""
        if not len(self.index):
            return (0, -1, -1)
        return (len(self.index), int(self.index[0]), int(self.index[-1]))


def pick(zoom: Zoom, series: Series, origin: float | None) -> Pick:
    """The points of ``series`` in ``zoom``, and their neighbours on either side.

    ``origin`` is the wall time relative time counts from. With no point inside,
    the last point before the range and the first after it (the line across it).
    """
    if zoom.axis == "step":
        x: np.ndarray = series.steps()
    else:
        x = series.times(slice(None))
        if zoom.axis == "relative":
            x = x - (origin if origin is not None else np.nan)
    # A time range came through the page's milliseconds (or minutes) and back: a point the
    # page's range ends on may come back an ulp or two outside it (1 zoom in 80 on wall time).
    slack = 0.0 if zoom.axis == "step" else 4 * max(math.ulp(zoom.lo), math.ulp(zoom.hi))
    lo, hi = zoom.lo - slack, zoom.hi + slack
    inside = (x >= lo) & (x <= hi)  # NaN (no wall time) is never inside
    near = inside.copy()
    near[1:] |= inside[:-1]
    near[:-1] |= inside[1:]
    if zoom.axis != "step":
        near &= np.isfinite(x)  # a neighbour without a wall time has no place on the axis
    index = np.flatnonzero(near)
    if not len(index):
        before, after = np.flatnonzero(x < lo)[-1:], np.flatnonzero(x > hi)[:1]
        index = np.concatenate((before, after))
    return Pick(index, ~inside[index])


def sample(
    values: np.ndarray, chosen: Pick | None, budget: int
) -> tuple[np.ndarray | slice, np.ndarray]:
    """(points, values) to draw of ``values``: at most ``budget``, the min/max envelope kept.

    ``chosen``: the zoom's points (None: every point). Every point of a zoom is drawn
    when they fit; the neighbours outside it give way first, then decimation.
    """
    if chosen is None:
        if len(values) <= budget:
            return slice(None), values
        index = decimate_indices(values, budget)
        return index, values[index]
    index, edge = chosen.index, chosen.edge
    if len(index) > budget and len(index) - int(edge.sum()) <= budget:
        index = index[~edge]
    if len(index) > budget:
        index = index[decimate_indices(values[index], budget)]
    return index, values[index]
