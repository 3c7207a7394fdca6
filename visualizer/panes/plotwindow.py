"""One line-plot window: its traces, and whether to append to it or redraw it.

Each series is drawn twice when smoothing is on (up to ``smoothed_lines`` series; past it
once, raw, and the window has no legend): the raw points, faint, and above them
TensorBoard's debiased moving average computed from every stored point
(:mod:`visualizer.model.smoothing`) before display decimation. Both traces share its name, color and legend entry: hiding it hides both.

What the page keeps across updates is visdom's doing: its plot pane carries a
user's zoom (an axis whose ``autorange`` is false) and hidden traces (by trace
name) from one drawing to the next. A zoom the page reports is drawn at full
resolution (:mod:`visualizer.model.zoom`). A new x axis or y scale needs a fresh pane:
the window is briefly replaced by an empty text pane, then drawn anew (see
:meth:`PlotWindow.set_view`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from visualizer import layout
from visualizer.model.decimate import MIN_POINTS, check_max_points
from visualizer.model.smoothing import Smoother
from visualizer.model.traces import local_ms
from visualizer.model.zoom import Pick, Zoom, pick, sample, zoom_of

from .plotmessage import (
    SPARSE_POINTS,
    TIME_UNITS,
    Line,
    Plan,
    TraceState,
    line_traces,
    placeholder,
    plot_layout,
    series_colors,
    time_unit,
    trace_budget,
)
from .view import ViewSettings

log = logging.getLogger(__name__)

# visdom 0.2.4 turns every append into a deepcopy plus jsonpatch.make_patch of the
# whole window, so an append costs in proportion to the points already drawn and
# soon costs far more than redrawing the window outright. So a window is appended
# to only while it is small (appends also keep browser traffic small); a bigger one
# is redrawn, at most every few times its last redraw took, so one busy window can
# not saturate the visdom server. The README's benchmark table has the figures.
APPEND_MAX_SHOWN = 800
REDRAW_COST_FACTOR = 4.0
MIN_REDRAW_INTERVAL = 0.1
MAX_REDRAW_INTERVAL = 1.0
# The page batches what arrives within 100 ms; a pane replaced for a new axis
# must stay replaced longer than that for the page to build a fresh plot.
REMOUNT_GAP = 0.4


class PlotWindow:
    """One line-plot window: decides between appending and redrawing, and when."""

    def __init__(
        self,
        spec: layout.WindowSpec,
        max_points: int,
        view: ViewSettings | None = None,
        colors: dict[str, str] | None = None,
        window_points: int | None = None,
        smoothed_lines: int | None = None,
    ) -> None:
        check_max_points(max_points)
        self.spec = spec
        self.max_points = max_points
        # Points over all its traces (None: no cap); half that when crowded: Plotly took
        # twice as long over a hundred raw curves of a point a pixel column each.
        self.window_points = window_points
        # Most lines drawn smoothed over their raw points and named in a legend (None: any
        # number): past it the browser would draw twice the traces and a legend of a hundred
        # names, of curves too many to tell apart anyway.
        self.smoothed_lines = smoothed_lines
        self._crowded = False  # more lines than that: a change of it changes the lines, a redraw
        self.view = view if view is not None else ViewSettings()
        # label -> color: given (the comparison's, a color per run), else from the labels
        self.colors = colors if colors is not None else {}
        self._own_colors = colors is None
        self.traces: dict[str, TraceState] = {}  # label -> state, in the server's trace order
        self.smoothers: dict[str, Smoother] = {}
        self.drawn = False
        self.deferred = False  # new points wait for the next redraw slot
        self._next_redraw = 0.0
        self._remount = False  # the page must drop its plot before the next drawing
        self._hold_until = 0.0
        self._unit = TIME_UNITS[0]
        self.zoom: Zoom | None = None  # the x range the page shows; None: the whole run
        self._rezoom = False
        self.redraws, self.appends = 0, 0  # messages sent, by kind

    def invalidate(self) -> None:
        """Forget what the server shows: the next plan redraws the window."""
        self.drawn, self.traces = False, {}

    def set_view(self, view: ViewSettings) -> None:
        """Draw with ``view`` from now on (a redraw; a new axis also resets the page's zoom)."""
        if view == self.view:
            return
        if view.axes() != self.view.axes():
            self._remount = self.drawn
            self.zoom = None  # the new pane shows the whole run
        if view.smoothing != self.view.smoothing:
            self.smoothers.clear()
        self.view = view
        self.invalidate()

    def zoom_to(self, event: dict[str, Any]) -> None:
        """Draw the x range the page's zoom ``event`` reports (none: the whole run) from now on."""
        try:
            zoom = zoom_of(event, self.view.x_axis, self._unit[2])
        except ValueError as err:
            log.warning("window %r: ignoring the page's zoom: %s", self.spec.win, err)
            return
        if self._remount:
            return  # the pane it zoomed goes for a new axis: the new one shows the whole run
        if zoom != self.zoom:
            self.zoom, self._rezoom = zoom, True  # redrawn at once: someone waits for it

    def _picks(self, lines: dict[str, Line]) -> dict[str, Pick | None]:
        """Each line's points in the zoom (None each when not zoomed)."""
        zoom = self.zoom
        return {
            k: None if zoom is None else pick(zoom, v.series, v.origin) for k, v in lines.items()
        }

    def _zoom_moved(self, lines: dict[str, Line], zoom: Zoom) -> bool:
        """Whether new points change what ``zoom`` shows; if not, they count as drawn."""
        for label, t in self.traces.items():
            if pick(zoom, lines[label].series, lines[label].origin).key() != t.picked:
                return True
        for label, t in self.traces.items():
            t.sent = len(lines[label].series)
        return False

    def plan(
        self, lines: dict[str, Line], env: str, now: float, force: bool = False
    ) -> Plan | None:
        """The message that brings the window up to date; None when it is, or must wait.

        ``force`` skips the wait for a redraw slot (a last sync before exiting).
        """
        self.deferred = False
        if not lines:
            return None
        self._crowded = self.smoothed_lines is not None and len(lines) > self.smoothed_lines
        if self._remount:
            self._remount = False
            self._hold_until = now + REMOUNT_GAP
            self.deferred = True  # the plot itself comes once the page swapped the pane out
            return placeholder(self.spec, env)
        if now < self._hold_until and not force:
            self.deferred = True  # the page is still swapping the pane out
            return None
        self._smooth(lines)
        if self._stale(lines):
            if self._own_colors:  # a new trace among them: the labels' colors anew
                self.colors = series_colors(lines)
            return self._redraw(lines, env)
        fresh = {label: len(lines[label].series) - t.sent for label, t in self.traces.items()}
        # A group's mean changes where a lagging run catches up: its rewinds tell, and its
        # window is redrawn in its redraw slot, never appended to (its band would not follow).
        banded = any(lines[label].band is not None for label in self.traces)
        moved = any(lines[label].series.rewinds != t.rewinds for label, t in self.traces.items())
        if not any(fresh.values()) and not moved:
            return None
        if self.zoom is not None and not moved and not self._zoom_moved(lines, self.zoom):
            return None
        within_max = (
            not banded
            and self.zoom is None
            and all(t.shown + fresh[label] <= self.max_points for label, t in self.traces.items())
        )
        per_point = 2 if self._smoothing else 1  # a raw and a smoothed trace
        shown = sum(t.shown for t in self.traces.values()) + sum(fresh.values())
        if within_max and per_point * shown <= APPEND_MAX_SHOWN:
            return self._append(lines, env)
        if now < self._next_redraw and not force:
            self.deferred = True
            return None
        return self._redraw(lines, env)

    def commit(self, plan: Plan, now: float, seconds: float) -> None:
        """Record that ``plan`` reached the server, taking ``seconds``."""
        self.traces = plan.traces
        self.drawn = bool(plan.traces)
        self._rezoom &= not plan.redraw
        if not plan.traces:
            return  # the placeholder of a remount
        if plan.redraw:
            self.redraws += 1
            pause = min(MAX_REDRAW_INTERVAL, max(MIN_REDRAW_INTERVAL, REDRAW_COST_FACTOR * seconds))
            self._next_redraw = now + pause
        else:
            self.appends += 1

    @property
    def _smoothing(self) -> bool:
        """Whether lines are drawn smoothed: smoothing is on and the window not crowded."""
        return bool(self.view.smoothing) and not self._crowded

    def _smooth(self, lines: dict[str, Line]) -> None:
        if not self._smoothing:
            return
        for label, line in lines.items():
            smoother = self.smoothers.get(label)
            if smoother is None:
                smoother = self.smoothers[label] = Smoother(self.view.smoothing)
            smoother.update(line.series)  # only the points added since the last plan

    def _stale(self, lines: dict[str, Line]) -> bool:
        """True when what the server shows is wrong, not just behind: redraw at once."""
        if not self.drawn or self._rezoom or set(lines) != set(self.traces):
            return True
        if self.view.x_axis == "relative" and self._relative_moved(lines):
            return True
        return any(
            (lines[label].series.rewinds != t.rewinds and lines[label].band is None)
            or (lines[label].band is None) != (t.band is None)
            or len(lines[label].series) < t.sent
            or (t.sent < SPARSE_POINTS)
            != (len(lines[label].series) < SPARSE_POINTS)  # smoothed, without markers now
            for label, t in self.traces.items()
        )

    def _smoothed(self, line: Line) -> bool:
        """Whether ``line`` is drawn smoothed: smoothing is on and it is not sparse."""
        return self._smoothing and len(line.series) >= SPARSE_POINTS

    def _relative_moved(self, lines: dict[str, Line]) -> bool:
        """True when relative times drawn no longer hold: a new unit, or a run's start moved."""
        return time_unit(lines) != self._unit or any(
            lines[label].origin != t.origin for label, t in self.traces.items()
        )

    def _x(self, line: Line, index: np.ndarray | slice) -> np.ndarray:
        """The x values of the points at ``index``: steps, or times as the view asks."""
        if self.view.x_axis == "step":
            if isinstance(index, slice):
                return line.series.steps(index.start or 0)
            return line.series.steps()[index]
        times = line.series.times(index)
        if self.view.x_axis == "relative":
            origin = line.origin if line.origin is not None else np.nan
            return (times - origin) / self._unit[2]
        return local_ms(times)

    @property
    def budget(self) -> int:
        """Points drawn per trace: a raw and a smoothed trace share ``max_points``."""
        return max(MIN_POINTS, self.max_points // 2) if self._smoothing else self.max_points

    def _window_budget(self, lines: dict[str, Line]) -> int:
        """Points per trace once the window's point budget is shared by all its traces."""
        traces = sum(
            1 + self._smoothed(line) + 2 * (line.band is not None) for line in lines.values()
        )
        points = self.window_points and self.window_points // (2 if self._crowded else 1)
        return trace_budget(self.budget, points, traces)

    def _traces_of(
        self,
        label: str,
        line: Line,
        raw: tuple[np.ndarray | slice, np.ndarray],
        smooth: tuple[np.ndarray | slice, np.ndarray] | None,
    ) -> list[dict[str, Any]]:
        """The traces of ``label`` (:func:`line_traces`) at this view's x values."""
        color = self.colors.get(label) or series_colors([label])[label]
        x = self._x(line, raw[0])
        smoothed = (self._x(line, smooth[0]), smooth[1]) if smooth else None
        return line_traces(label, line, (raw[0], x, raw[1]), color, smoothed)

    def _redraw(self, lines: dict[str, Line], env: str) -> Plan:
        order = [label for label in self.traces if label in lines] + [
            label for label in lines if label not in self.traces
        ]
        self._unit = time_unit(lines)
        data, states, picks = [], {}, self._picks(lines)
        budget = self._window_budget(lines)
        for label in order:
            line, chosen = lines[label], picks[label]
            raw = sample(line.series.values(), chosen, budget)
            smooth = (
                sample(self.smoothers[label].values(), chosen, budget)
                if self._smoothed(line)
                else None
            )
            traces = self._traces_of(label, line, raw, smooth)
            data += traces
            states[label] = TraceState(
                len(line.series),
                len(traces[0]["x"]),
                line.series.rewinds,
                line.origin,
                chosen.key() if chosen is not None else None,
                line.band,
            )
        # A crowded window has no legend: a hundred names under the plot took the browser
        # longer to draw than the curves (0.3 s of 0.7 s a window), and a hover names a run.
        legend = not self._crowded
        msg = {
            "data": data,
            "win": self.spec.win,
            "eid": env,
            "layout": plot_layout(self.spec, self.view, self._unit, self.zoom)
            | {"showlegend": legend},
            "opts": {
                "title": self.spec.title,
                "showlegend": legend,
                "width": layout.PLOT_SIZE[0],
                "height": self.spec.height or layout.PLOT_SIZE[1],
            },
        }
        return Plan("events", msg, states, redraw=True)

    def _append(self, lines: dict[str, Line], env: str) -> Plan:
        data, states = [], {}
        for label, trace in self.traces.items():
            line = lines[label]
            new = slice(trace.sent, None)
            smooth = (
                (new, self.smoothers[label].values(trace.sent)) if self._smoothed(line) else None
            )
            # Every trace goes in, in the server's order: visdom appends data[i]
            # to trace i. An empty one is skipped by the server.
            traces = self._traces_of(label, line, (new, line.series.values(trace.sent)), smooth)
            data += [{"x": t["x"], "y": t["y"], "name": t["name"]} for t in traces]
            shown = trace.shown + len(traces[0]["x"])
            states[label] = TraceState(len(line.series), shown, trace.rewinds, trace.origin)
        msg: dict[str, Any] = {
            "data": data,
            "win": self.spec.win,
            "eid": env,
            "name": None,
            "append": True,
            "opts": {},
            "layout": {},
        }
        return Plan("update", msg, states, redraw=False)
