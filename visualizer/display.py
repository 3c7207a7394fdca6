"""Keep visdom windows equal to the data: append what is new, redraw what changed.

Each env is drawn by an :class:`EnvDisplay` that remembers, per window and per
trace, how much of each series is already on the server. A sync then sends at
most one message per window: an ``append`` of the new points of every trace
(small windows), or a full redraw, decimated to ``max_points`` per trace, when
a trace is new, a series rewound (a resumed run logged a step again), or the
window is too big for visdom's costly appends. Before appending it asks the
server whether the windows still exist, so a restarted visdom server (or a
window closed in the browser) is rebuilt from the data rather than appended
to: no lost and no duplicated points.
"""

from __future__ import annotations

import base64
import logging
import queue
import struct
import time
from collections.abc import Callable, Iterable
from typing import Any

from . import layout
from .extra_windows import ExtraWindows
from .plotwindow import MIN_REDRAW_INTERVAL as MIN_REDRAW_INTERVAL  # the follow loop paces by it
from .plotwindow import Line, Plan, PlotWindow
from .rundata import RunData, SeriesKey
from .series import Series
from .status import status_view
from .view import CONTROLS_WIN, ViewSettings, apply_event, controls_message
from .visdom_client import VisdomClient

log = logging.getLogger(__name__)

DEFAULT_MAX_POINTS = 2000
# How often an env that has nothing new is still checked for a visdom restart.
PROBE_INTERVAL = 2.0
# Status panels show ages in seconds: refresh a running run's panel every second,
# a finished one's rarely.
STATUS_REFRESH_RUNNING = 1.0
STATUS_REFRESH_IDLE = 30.0


# A run's window: its spec, its traces' lines by label, and each label's series key.
_RunWindow = tuple[layout.WindowSpec, dict[str, Line], dict[str, SeriesKey]]
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
        self.colors: dict[str, str] = {}  # trace label -> color, the same in every window
        self.sentinel_drawn = False
        self.controls_drawn = False
        self._last_probe = 0.0

    def invalidate(self) -> None:
        """Forget everything on the server; the next sync rebuilds the env."""
        for window in self.plots.values():
            window.invalidate()
        self.sentinel_drawn = False
        self.controls_drawn = False

    @property
    def pending(self) -> bool:
        """True when a window holds back new points until its next redraw slot."""
        return any(window.deferred for window in self.plots.values())

    def _sync_controls(self) -> bool:
        """Apply the page's changes to the view; draw the controls pane if it is not there."""
        events = self.client.events.subscribe(self.env, CONTROLS_WIN)
        while True:
            try:
                event = events.get_nowait()
            except queue.Empty:
                break
            if event.get("event_type") != "PropertyUpdate":
                continue
            view = apply_event(self.view, event)
            self.controls_drawn = False  # show what is in use, also when a value was refused
            if view != self.view:
                log.info("env %r: view changed from the page to %s", self.env, view)
                self.view = view
                for window in self.plots.values():
                    window.set_view(view)
        if self.controls_drawn:
            return False
        self.client.post("events", controls_message(self.env, self.view))
        self.controls_drawn = True
        return True

    def _sync_plots(self, windows: _Windows, now: float, force: bool = False) -> bool:
        """Bring every plot window up to date; True when something was sent."""
        plans = self._plan_all(windows, now, force)
        appending = [win for win, plan in plans.items() if not plan.redraw]
        probe_due = now - self._last_probe >= PROBE_INTERVAL
        if self.sentinel_drawn and (appending or probe_due):
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

    def _plan_all(self, windows: _Windows, now: float, force: bool = False) -> dict[str, Plan]:
        plans = {}
        for spec, lines in windows:
            window = self.plots.get(spec.win)
            if window is None:
                window = PlotWindow(spec, self.max_points, self.view, self.colors)
                self.plots[spec.win] = window
            plan = window.plan(lines, self.env, now, force)
            if plan is not None:
                plans[spec.win] = plan
        return plans

    def _text(self, win: str, html: str, title: str) -> None:
        self.client.post(
            "events",
            {
                "data": [{"content": html, "type": "text"}],
                "win": win,
                "eid": self.env,
                "opts": {"title": title},
            },
        )


class RunDisplay(EnvDisplay):
    """A run's env: a plot window per group, the latest images, the status panel."""

    def __init__(
        self, client: VisdomClient, env: str, max_points: int, view: ViewSettings | None = None
    ) -> None:
        super().__init__(client, env, max_points, layout.STATUS_WIN, view)
        self.images_drawn: dict[SeriesKey, int] = {}  # key -> step drawn
        self._status_html: str | None = None
        self._status_at = 0.0
        self.sent_steps: dict[SeriesKey, int] = {}  # last step on the server per series
        self.extra = ExtraWindows(client.post, env)  # issue 13: text, histograms, hparams...

    def invalidate(self) -> None:
        super().invalidate()
        self.extra.invalidate()
        self.images_drawn.clear()
        self._status_html = None

    def sync(self, run: RunData, now: float | None = None, force: bool = False) -> bool:
        """Send whatever of ``run`` the server does not show yet; True if anything was sent."""
        now = time.time() if now is None else now
        windows = self._windows(run)
        sent = self._sync_controls()
        sent |= self._sync_plots([(spec, lines) for spec, lines, _ in windows], now, force)
        sent |= self._sync_images(run)
        sent |= self.extra.sync(run, now)
        sent |= self._sync_status(run, now)
        self.sentinel_drawn = True
        self.sent_steps = self._sent_steps(windows)
        return sent

    def _sent_steps(self, windows: list[_RunWindow]) -> dict[SeriesKey, int]:
        """The last step of each series that is on the server (held-back points excluded)."""
        out: dict[SeriesKey, int] = {}
        for spec, series, keys in windows:
            window = self.plots.get(spec.win)
            for label, trace in (window.traces if window else {}).items():
                if trace.sent and label in series:
                    out[keys[label]] = series[label].series.step_at(trace.sent - 1)
        return out

    @staticmethod
    def _windows(run: RunData) -> list[_RunWindow]:
        """The windows that show ``run``, in display order."""
        origin = run_start(run)
        by_win: dict[str, tuple[layout.WindowSpec, dict[SeriesKey, Series]]] = {}
        for (group, name), series in run.series.items():
            spec = layout.window_for_group(group)
            by_win.setdefault(spec.win, (spec, {}))[1][(group, name)] = series
        out = []
        for spec, members in sorted(by_win.values(), key=lambda item: item[0].order):
            groups = {group for group, _ in members}
            # One group: traces are named by series; several (val + validation): group/name.
            labels = {key: key[1] if len(groups) == 1 else f"{key[0]}/{key[1]}" for key in members}
            out.append(
                (
                    spec,
                    {labels[key]: Line(s, origin) for key, s in members.items()},
                    {label: key for key, label in labels.items()},
                )
            )
        return out

    def _sync_images(self, run: RunData) -> bool:
        sent = False
        for key, image in run.images.items():
            if key in self.images_drawn and key not in run.changed_images:
                continue
            self.client.post(
                "events", _image_message(self.env, image.group, image.name, image.step, image.png)
            )
            self.images_drawn[key] = image.step
            run.changed_images.discard(key)
            sent = True
        return sent

    def _sync_status(self, run: RunData, now: float) -> bool:
        running = (run.status or {}).get("state") == "running"
        refresh = STATUS_REFRESH_RUNNING if running else STATUS_REFRESH_IDLE
        if not (
            run.status_changed or self._status_html is None or now - self._status_at >= refresh
        ):
            return False
        html = status_view(run.status, run.meta, run.eta, now).html()
        run.status_changed = False
        if html == self._status_html:
            return False
        self._text(layout.STATUS_WIN, html, f"{run.name}: status")
        self._status_html, self._status_at = html, now
        return True


class CompareDisplay(EnvDisplay):
    """One env overlaying every run's train losses: a window per loss, a trace per run."""

    SENTINEL = "runs"

    def __init__(
        self, client: VisdomClient, env: str, max_points: int, view: ViewSettings | None = None
    ) -> None:
        super().__init__(client, env, max_points, self.SENTINEL, view)
        self._runs_listed: list[str] | None = None

    def invalidate(self) -> None:
        super().invalidate()
        self._runs_listed = None

    def sync(self, runs: Iterable[RunData], now: float | None = None, force: bool = False) -> bool:
        """Overlay the ``train`` series of ``runs``; True if anything was sent."""
        now = time.time() if now is None else now
        runs = sorted(runs, key=lambda r: r.name)
        windows: dict[str, tuple[layout.WindowSpec, dict[str, Line]]] = {}
        for run in runs:
            origin = run_start(run)  # runs started at different times overlay in relative time
            for (group, name), series in run.series.items():
                if layout.window_for_group(group).win != "train":
                    continue
                spec = layout.WindowSpec(
                    f"compare_{layout.safe_id(name)}", f"train {name}: all runs", name, 0
                )
                windows.setdefault(spec.win, (spec, {}))[1][run.name] = Line(series, origin)
        sent = self._sync_controls()
        sent |= self._sync_plots(sorted(windows.values(), key=lambda w: w[0].win), now, force)
        names = [run.name for run in runs]
        if names != self._runs_listed:
            items = "".join(f"<li>{n}</li>" for n in names)
            self._text(self.SENTINEL, f"<b>runs compared</b><ul>{items}</ul>", "runs")
            self._runs_listed = names
            sent = True
        self.sentinel_drawn = True
        return sent


# --- messages ------------------------------------------------------------------


def run_start(run: RunData) -> float | None:
    """When ``run`` started, as far as its series know: relative time counts from there."""
    starts = [s.first_time for s in run.series.values() if s.first_time is not None]
    return min(starts, default=None)


def _png_size(png: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, without decoding the image."""
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        return struct.unpack(">II", png[16:24])
    return None


def _image_message(env: str, group: str, name: str, step: int, png: bytes) -> dict[str, Any]:
    caption = f"{name} @ step {step}"
    opts: dict[str, Any] = {"title": f"{group}/{name}" if group != "images" else name}
    size = _png_size(png)
    if size:
        # Small images (MNIST's 28 px) get a readable pane; big ones a bounded one.
        scale = min(max(1.0, 240 / max(min(size), 1)), 640 / max(max(size), 1))
        opts["width"], opts["height"] = int(size[0] * scale), int(size[1] * scale)
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {
        "data": [{"content": {"src": src, "caption": caption}, "type": "image"}],
        "win": layout.image_window(group, name),
        "eid": env,
        "opts": opts,
    }


OnSent = Callable[[str, dict[SeriesKey, int], float], None]
