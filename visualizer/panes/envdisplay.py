"""Keep visdom windows equal to the data: append what is new, redraw what changed.

Each env is drawn by an :class:`EnvDisplay` that remembers, per window and per
trace, how much of each series is already on the server. A draw then sends at
most one message per window: an ``append`` of the new points of every trace
(small windows), or a full redraw, decimated to ``max_points`` per trace, when
a trace is new, a series rewound (a resumed run logged a step again), or the
window is too big for visdom's costly appends. Before appending it asks the
server whether the windows still exist, so a restarted visdom server (or a
window closed in the browser) is rebuilt from the data rather than appended
to: no lost and no duplicated points.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from visualizer import layout, markup
from visualizer.model.zoom import ZOOM_EVENT
from visualizer.visdom_client import VisdomClient

from .plotmessage import Line, Plan
from .plotwindow import PlotWindow
from .view import CONTROLS_WIN, ViewSettings, apply_event, controls_message

log = logging.getLogger(__name__)

# How often an env that has nothing new is still checked for a visdom restart.
PROBE_INTERVAL = 2.0

_Windows = list[tuple[layout.WindowSpec, dict[str, Line]]]


class EnvDisplay:
    """The windows of one visdom env and the checks that keep them true to the data.

    Its plots follow the env's :class:`ViewSettings`, which the env's controls
    pane (a visdom properties pane) changes while the page is open.
    """

    def __init__(
        self,
        client: VisdomClient,
        env: str,
        max_points: int,
        sentinel: str,
        view: ViewSettings | None = None,
    ) -> None:
        self.client = client
        self.env = env
        self.max_points = max_points
        self.sentinel = sentinel  # a window always present once drawn: gone means the env is gone
        self.view = view if view is not None else ViewSettings()
        self.plots: dict[str, PlotWindow] = {}
        # Trace label -> color in every window, where the env fixes them (the comparison's
        # runs); None: each window colors its series by name (plotwindow.series_colors).
        self.colors: dict[str, str] | None = None
        self.window_points: int | None = None  # points a window draws in all (None: no cap)
        self.smoothed_lines: int | None = None  # most lines a window smooths (None: any)
        self.sentinel_drawn = False
        self.controls_drawn = False
        self._last_probe = 0.0
        self._drawn_at = 0.0  # when the sentinel was last drawn anew
        self._drawn_version: object = None  # what the data was at the last full draw (see _idle)
        self._texts: dict[str, str] = {}  # text pane -> HTML on the server
        self._shown: list[str] = []  # windows on the server, in the page's order
        self.header_height = layout.HEADER_HEIGHT
        self.controls_width = layout.VIEW_WIDTH  # the view pane's (the comparison's may narrow it)

    def invalidate(self) -> None:
        """Forget everything on the server; the next draw rebuilds the env."""
        for window in self.plots.values():
            window.invalidate()
        self.sentinel_drawn = False
        self.controls_drawn = False
        self._texts.clear()
        self._shown = []

    def _drawn(self, now: float) -> None:
        """A draw ended with the env's sentinel on the server."""
        if not self.sentinel_drawn:
            self.sentinel_drawn, self._drawn_at = True, now

    def _keep_order(self, wanted: list[str]) -> None:
        """Make the server's windows come in the order of ``wanted`` once this draw draws them.

        The page lays windows out in the order they were created. A window that
        is new and ranks before windows already there (a group that appears late
        in a live run) gets its place by closing those and drawing them again
        after it, so a live run, its replay, local or S3, look the same.
        """
        rank = {win: i for i, win in enumerate(wanted)}
        new = [rank[win] for win in wanted if win not in self._shown]
        first_new = min(new, default=len(wanted))
        closing = [win for win in self._shown if rank.get(win, -1) > first_new or win not in rank]
        for win in closing:
            self.client.post("close", {"eid": self.env, "win": win})
            self._forget(win)
        self._shown = list(wanted)

    def _forget(self, win: str) -> None:
        """Window ``win`` was closed: the next draw draws it anew."""
        if win in self.plots:
            self.plots[win].invalidate()
        self._texts.pop(win, None)
        if win == CONTROLS_WIN:
            self.controls_drawn = False

    def _fit_header(self, content_height: int, floor: int, *texts: str) -> None:
        """Make the first row as tall as its text pane needs to show ``content_height`` px
        (:func:`~visualizer.layout.text_pane_height`) whole: at least ``floor`` (what its other
        panes need), at most :data:`~visualizer.layout.MAX_HEADER_HEIGHT` (more rows scroll).
        Its panes stay equal, so the page lays the windows under them out the same whatever
        order they came in; at a new height the controls and ``texts`` panes are drawn again."""
        height = min(max(floor, content_height), layout.MAX_HEADER_HEIGHT)
        if height != self.header_height:
            self.header_height = height
            for win in (CONTROLS_WIN, *texts):
                self._forget(win)

    @property
    def pending(self) -> bool:
        """True when a window holds back new points until its next redraw slot."""
        return any(window.deferred for window in self.plots.values())

    def _property_updates(self, win: str, kind: str = "PropertyUpdate") -> Iterator[dict[str, Any]]:
        """The events of ``kind`` from window ``win`` on the page since the last look."""
        events = self.client.events.subscribe(self.env, win)
        while not events.empty():  # the follow loop is the only one taking them
            event = events.get_nowait()
            if event.get("event_type") == kind:
                yield event

    def _draw_controls(self) -> bool:
        """Apply the page's changes to the view; draw the controls pane if it is not there."""
        for event in self._property_updates(CONTROLS_WIN):
            view = apply_event(self.view, event)
            self.controls_drawn = False  # show what is in use, also when a value was refused
            if view != self.view:
                log.info("env %r: view changed from the page to %s", self.env, view)
                self.view = view
                for window in self.plots.values():
                    window.set_view(view)
        if self.controls_drawn:
            return False
        message = controls_message(self.env, self.view)
        message["opts"]["height"] = self.header_height  # as tall as the first row's panes
        message["opts"]["width"] = self.controls_width
        self.client.post("events", message)
        self.controls_drawn = True
        return True

    def _draw_plots(self, windows: _Windows, now: float, force: bool = False) -> bool:
        """Bring every plot window up to date; True when something was sent."""
        plans = self._plan_all(windows, now, force)
        appending = [win for win, plan in plans.items() if not plan.redraw]
        if self.sentinel_drawn and not appending and self._probe_due(now):
            if self._env_gone(now):
                plans = self._plan_all(windows, now, force)
        elif self.sentinel_drawn and appending:
            # Appends to a window that is gone would be lost: check each one.
            self._last_probe = now
            if not self.client.window_exists(self.env, self.sentinel):
                log.info(
                    "visdom env %r is gone (server restarted or env closed): rebuilding it",
                    self.env,
                )
                self.invalidate()
                plans = self._plan_all(windows, now, force)
            else:
                missing = [win for win in appending if not self.client.window_exists(self.env, win)]
                for win in missing:
                    log.info("window %r of env %r was closed: redrawing it", win, self.env)
                    self.plots[win].invalidate()
                if missing:
                    plans = self._plan_all(windows, now, force)
        for win, plan in plans.items():
            started = time.perf_counter()
            self.client.post(plan.route, plan.msg)
            self.plots[win].commit(plan, now, time.perf_counter() - started)
        return bool(plans)

    def _probe_due(self, now: float) -> bool:
        """Whether an idle env is due a check that the server still has it."""
        return now - self._last_probe >= PROBE_INTERVAL

    def _env_gone(self, now: float) -> bool:
        """Whether the env is lost (a restarted server, a deleted env); if so, forget it.

        One listing of the server's envs answers every idle display.
        """
        self._last_probe = now
        if self.client.env_listed(self.env, now, PROBE_INTERVAL, self._drawn_at):
            return False
        log.info("visdom env %r is gone (server restarted or env deleted): rebuilding it", self.env)
        self.invalidate()
        return True

    def _idle(self, news: object, now: float, *panes: str) -> bool:
        """True when a full draw would find nothing to send.

        That is: ``news`` (the data's update counts) equals :attr:`_drawn_version`, stored at the
        last full draw; the env is drawn; no point waits for a redraw slot; and the page
        changed none of ``panes`` nor zoomed a plot. Now and then it checks that the server
        still has the env; an env found gone is forgotten, so the full draw rebuilds it.
        A forced draw (held-back points sent now: :meth:`_plan_all`) asks this too: the
        stop's last pass rebuilt every pane of runs of 12,000 options each, 2 s of a stop.
        """
        quiet = (
            news == self._drawn_version
            and self.sentinel_drawn
            and self.controls_drawn
            and not self.pending
            # Subscribing also tells the page listener someone still listens.
            and all(
                self.client.events.subscribe(self.env, p).empty() for p in [*panes, *self.plots]
            )
        )
        return quiet and not (self._probe_due(now) and self._env_gone(now))

    def _plan_all(self, windows: _Windows, now: float, force: bool = False) -> dict[str, Plan]:
        plans = {}
        for spec, lines in windows:
            window = self.plots.get(spec.win)
            if window is None:
                window = PlotWindow(
                    spec,
                    self.max_points,
                    self.view,
                    self.colors,
                    self.window_points,
                    self.smoothed_lines,
                )
                self.plots[spec.win] = window
            window.spec = spec  # its y label names the series it has now
            for event in self._property_updates(spec.win, ZOOM_EVENT):
                window.zoom_to(event)
            plan = window.plan(lines, self.env, now, force)
            if plan is not None:
                plans[spec.win] = plan
        return plans

    def _text(self, win: str, html: markup.Html, title: str, **size: int) -> bool:
        """Show ``html`` in text pane ``win`` (``width``, ``height`` in pixels); False if it does."""
        if self._texts.get(win) == html:
            return False
        self.client.post(
            "events",
            {
                "data": [{"content": html, "type": "text"}],
                "win": win,
                "eid": self.env,
                "opts": {"title": title, **size},
            },
        )
        self._texts[win] = html
        return True
