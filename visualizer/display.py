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
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import layout
from .decimate import check_max_points, decimate_indices
from .rundata import RunData, SeriesKey
from .series import Series
from .status import status_view
from .visdom_client import VisdomClient

log = logging.getLogger(__name__)

DEFAULT_MAX_POINTS = 2000
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
# How often an env that has nothing new is still checked for a visdom restart.
PROBE_INTERVAL = 2.0
# Status panels show ages in seconds: refresh a running run's panel every second,
# a finished one's rarely.
STATUS_REFRESH_RUNNING = 1.0
STATUS_REFRESH_IDLE = 30.0


# A run's window: its spec, its traces' series by label, and each label's series key.
_RunWindow = tuple[layout.WindowSpec, dict[str, Series], dict[str, SeriesKey]]


@dataclass
class _Trace:
    """How much of a series one drawn trace shows."""

    sent: int  # series points represented on the server (an index into the series)
    shown: int  # points actually drawn after decimation
    rewinds: int  # the series' rewind count when drawn


@dataclass
class _Plan:
    """One message for one window and the trace states it leaves on the server."""

    route: str  # visdom route: "events" (redraw) or "update" (append)
    msg: dict[str, Any]
    traces: dict[str, _Trace]
    redraw: bool


class PlotWindow:
    """One line-plot window: decides between appending and redrawing, and when."""

    def __init__(self, spec: layout.WindowSpec, max_points: int) -> None:
        check_max_points(max_points)
        self.spec = spec
        self.max_points = max_points
        self.traces: dict[str, _Trace] = {}  # label -> state, in the server's trace order
        self.drawn = False
        self.deferred = False  # new points wait for the next redraw slot
        self._next_redraw = 0.0
        self.redraws = 0  # messages sent, by kind
        self.appends = 0

    def invalidate(self) -> None:
        """Forget what the server shows: the next plan redraws the window."""
        self.drawn = False
        self.traces = {}

    def plan(
        self, series: dict[str, Series], env: str, now: float, force: bool = False
    ) -> _Plan | None:
        """The message that brings the window up to date; None when it is, or must wait.

        ``force`` skips the wait for a redraw slot (a last sync before exiting).
        """
        self.deferred = False
        if not series:
            return None
        if self._stale(series):
            return self._redraw(series, env)
        fresh = {label: len(series[label]) - trace.sent for label, trace in self.traces.items()}
        if not any(fresh.values()):
            return None
        within_max = all(
            t.shown + fresh[label] <= self.max_points for label, t in self.traces.items()
        )
        if (
            within_max
            and sum(t.shown for t in self.traces.values()) + sum(fresh.values()) <= APPEND_MAX_SHOWN
        ):
            return self._append(series, env)
        if now < self._next_redraw and not force:
            self.deferred = True
            return None
        return self._redraw(series, env)

    def commit(self, plan: _Plan, now: float, seconds: float) -> None:
        """Record that ``plan`` reached the server, taking ``seconds``."""
        self.traces = plan.traces
        self.drawn = True
        if plan.redraw:
            self.redraws += 1
            pause = min(MAX_REDRAW_INTERVAL, max(MIN_REDRAW_INTERVAL, REDRAW_COST_FACTOR * seconds))
            self._next_redraw = now + pause
        else:
            self.appends += 1

    def _stale(self, series: dict[str, Series]) -> bool:
        """True when what the server shows is wrong, not just behind: redraw at once."""
        if not self.drawn or set(series) != set(self.traces):
            return True
        return any(
            series[label].rewinds != trace.rewinds or len(series[label]) < trace.sent
            for label, trace in self.traces.items()
        )

    def _redraw(self, series: dict[str, Series], env: str) -> _Plan:
        order = [label for label in self.traces if label in series] + [
            label for label in series if label not in self.traces
        ]
        data, states = [], {}
        for label in order:
            s = series[label]
            x, y = s.steps(), s.values()
            if len(x) > self.max_points:
                idx = decimate_indices(y, self.max_points)
                x, y = x[idx], y[idx]
            data.append(_line(label, x, y, full=True))
            states[label] = _Trace(sent=len(s), shown=len(x), rewinds=s.rewinds)
        msg = {
            "data": data,
            "win": self.spec.win,
            "eid": env,
            "layout": _plot_layout(self.spec),
            "opts": {"title": self.spec.title, "showlegend": True},
        }
        return _Plan("events", msg, states, redraw=True)

    def _append(self, series: dict[str, Series], env: str) -> _Plan:
        data, states = [], {}
        for label, trace in self.traces.items():
            s = series[label]
            x, y = s.steps(trace.sent), s.values(trace.sent)
            # Every trace goes in, in the server's order: visdom appends data[i]
            # to trace i. An empty one is skipped by the server.
            data.append(_line(label, x, y))
            states[label] = _Trace(sent=len(s), shown=trace.shown + len(x), rewinds=trace.rewinds)
        msg: dict[str, Any] = {
            "data": data,
            "win": self.spec.win,
            "eid": env,
            "name": None,
            "append": True,
            "opts": {},
            "layout": {},
        }
        return _Plan("update", msg, states, redraw=False)


class EnvDisplay:
    """The windows of one visdom env and the checks that keep them true to the data."""

    def __init__(self, client: VisdomClient, env: str, max_points: int, sentinel: str) -> None:
        self.client = client
        self.env = env
        self.max_points = max_points
        self.sentinel = sentinel  # a window always present once drawn: gone means the env is gone
        self.plots: dict[str, PlotWindow] = {}
        self.sentinel_drawn = False
        self._last_probe = 0.0

    def invalidate(self) -> None:
        """Forget everything on the server; the next sync rebuilds the env."""
        for window in self.plots.values():
            window.invalidate()
        self.sentinel_drawn = False

    @property
    def pending(self) -> bool:
        """True when a window holds back new points until its next redraw slot."""
        return any(window.deferred for window in self.plots.values())

    def _sync_plots(
        self,
        windows: list[tuple[layout.WindowSpec, dict[str, Series]]],
        now: float,
        force: bool = False,
    ) -> bool:
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

    def _plan_all(
        self,
        windows: list[tuple[layout.WindowSpec, dict[str, Series]]],
        now: float,
        force: bool = False,
    ) -> dict[str, _Plan]:
        plans = {}
        for spec, series in windows:
            window = self.plots.get(spec.win)
            if window is None:
                window = self.plots[spec.win] = PlotWindow(spec, self.max_points)
            plan = window.plan(series, self.env, now, force)
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

    def __init__(self, client: VisdomClient, env: str, max_points: int) -> None:
        super().__init__(client, env, max_points, sentinel=layout.STATUS_WIN)
        self.images_drawn: dict[SeriesKey, int] = {}  # key -> step drawn
        self._status_html: str | None = None
        self._status_at = 0.0
        self.sent_steps: dict[SeriesKey, int] = {}  # last step on the server per series

    def invalidate(self) -> None:
        super().invalidate()
        self.images_drawn.clear()
        self._status_html = None

    def sync(self, run: RunData, now: float | None = None, force: bool = False) -> bool:
        """Send whatever of ``run`` the server does not show yet; True if anything was sent."""
        now = time.time() if now is None else now
        windows = self._windows(run)
        sent = self._sync_plots([(spec, series) for spec, series, _ in windows], now, force)
        sent |= self._sync_images(run)
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
                    out[keys[label]] = series[label].step_at(trace.sent - 1)
        return out

    @staticmethod
    def _windows(run: RunData) -> list[_RunWindow]:
        """The windows that show ``run``, in display order."""
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
                    {labels[key]: s for key, s in members.items()},
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

    def __init__(self, client: VisdomClient, env: str, max_points: int) -> None:
        super().__init__(client, env, max_points, sentinel=self.SENTINEL)
        self._runs_listed: list[str] | None = None

    def invalidate(self) -> None:
        super().invalidate()
        self._runs_listed = None

    def sync(self, runs: Iterable[RunData], now: float | None = None, force: bool = False) -> bool:
        """Overlay the ``train`` series of ``runs``; True if anything was sent."""
        now = time.time() if now is None else now
        runs = sorted(runs, key=lambda r: r.name)
        windows: dict[str, tuple[layout.WindowSpec, dict[str, Series]]] = {}
        for run in runs:
            for (group, name), series in run.series.items():
                if layout.window_for_group(group).win != "train":
                    continue
                spec = layout.WindowSpec(
                    f"compare_{layout.safe_id(name)}", f"train {name}: all runs", name, 0
                )
                windows.setdefault(spec.win, (spec, {}))[1][run.name] = series
        sent = self._sync_plots(sorted(windows.values(), key=lambda w: w[0].win), now, force)
        names = [run.name for run in runs]
        if names != self._runs_listed:
            items = "".join(f"<li>{n}</li>" for n in names)
            self._text(self.SENTINEL, f"<b>runs compared</b><ul>{items}</ul>", "runs")
            self._runs_listed = names
            sent = True
        self.sentinel_drawn = True
        return sent


# --- messages ------------------------------------------------------------------


def _json_floats(values: np.ndarray) -> list:
    """Values as a JSON-safe list: NaN and +/-inf become None (a gap in the line)."""
    finite = np.isfinite(values)
    out = values.tolist()
    if not finite.all():
        for i in np.flatnonzero(~finite).tolist():
            out[i] = None
    return out


def _line(label: str, x: np.ndarray, y: np.ndarray, full: bool = False) -> dict[str, Any]:
    trace = {
        "x": x.tolist(),
        "y": _json_floats(y),
        "name": label,
        "type": "scatter",
        "mode": "lines",
    }
    if full:
        # visdom's page reads marker.line when its "smooth lines" button is used.
        trace["marker"] = {"size": 10, "symbol": "dot", "line": {"color": "#000000", "width": 0.5}}
    return trace


def _plot_layout(spec: layout.WindowSpec) -> dict[str, Any]:
    return {
        "title": spec.title,
        "showlegend": True,
        "margin": {"l": 60, "r": 60, "t": 60, "b": 60},
        "xaxis": {"title": "step"},
        "yaxis": {"title": spec.ylabel},
    }


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
