"""A run's env: its status, view pane, options, plot windows, images and extra panes.

:class:`RunDisplay` lays a run's series out in windows (folded when there are
many) and keeps them, and its text panes, equal to the run's data, through the
checks of :class:`~visualizer.panes.envdisplay.EnvDisplay`.
"""

from __future__ import annotations

import time
from dataclasses import replace

from visualizer import layout, markup
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.series import Series
from visualizer.model.status import refresh_after, status_view
from visualizer.visdom_client import VisdomClient

from .envdisplay import EnvDisplay
from .extra_windows import ExtraWindows, plotted_series
from .fold import RunWindow as _RunWindow  # its spec, lines by label, each label's key
from .fold import fold_run
from .hparams import run_table
from .images import ImagePanes
from .plotmessage import Line
from .view import CONTROLS_WIN, ViewSettings

DEFAULT_MAX_POINTS = 2000


def run_windows(run: RunData) -> list[_RunWindow]:
    """The windows that show ``run``, in display order (a metric of the hparams table
    logged once only there): the live page's and the snapshot file's."""
    origin = run_start(run)
    by_win: dict[str, tuple[layout.WindowSpec, dict[SeriesKey, Series]]] = {}
    for (group, name), series in plotted_series(run).items():
        spec = layout.window_for(group, name)
        by_win.setdefault(spec.win, (spec, {}))[1][(group, name)] = series
    out = []
    for spec, members in sorted(by_win.values(), key=lambda item: layout.window_order(item[0])):
        groups = len({group for group, _ in members})
        labels = {key: layout.trace_label(spec, key, groups) for key in members}
        out.append(
            (
                replace(spec, ylabel=layout.ylabel(spec, list(labels.values()))),
                {labels[key]: Line(s, origin) for key, s in members.items()},
                {label: key for key, label in labels.items()},
            )
        )
    return out


class RunDisplay(EnvDisplay):
    """A run's env: status, view pane, options, a plot window per group, images, in that order."""

    def __init__(
        self, client: VisdomClient, env: str, max_points: int, view: ViewSettings | None = None
    ) -> None:
        super().__init__(client, env, max_points, layout.STATUS_WIN, view)
        self.images = ImagePanes(client, env)
        self.download = markup.Html("")  # over the options: how to get the run's scalars as CSV
        self._status_at = 0.0
        self.sent_steps: dict[SeriesKey, int] = {}  # last step on the server per series
        self.extra = ExtraWindows(client.post, env)  # issue 13: text, histograms, hparams...

    def invalidate(self) -> None:
        super().invalidate()
        self.images.invalidate()
        self.extra.invalidate()

    def _forget(self, win: str) -> None:
        super()._forget(win)
        self.images.forget(win)

    def draw(self, run: RunData, now: float | None = None, force: bool = False) -> bool:
        """Send whatever of ``run`` the server does not show yet; True if anything was sent."""
        now = time.time() if now is None else now
        # With nothing new only the clock moves the status panel's ages and the
        # layout charts: a hundred idle runs cost a few comparisons each, not a full draw.
        if self._idle(run.version, now, CONTROLS_WIN):
            return self._draw_status(run, now) | self.extra.draw(run, now)
        windows, folding = fold_run(self._windows(run))
        self._keep_order(
            [
                layout.STATUS_WIN,
                CONTROLS_WIN,
                layout.OPTIONS_WIN,
                *(spec.win for spec, _, _ in windows),
                *self.images.windows(run),
            ]
        )
        options = markup.join(self.download, folding.note() if folding else "", run_table(run))
        height = layout.text_pane_height(options, layout.OPTIONS_WIDTH)
        self._fit_header(height, layout.HEADER_HEIGHT, layout.STATUS_WIN, layout.OPTIONS_WIN)
        sent = self._draw_status(run, now)
        sent |= self._draw_controls()
        sent |= self._text(
            layout.OPTIONS_WIN,
            options,
            f"{run.name}: options",
            width=layout.OPTIONS_WIDTH,
            height=self.header_height,
        )
        sent |= self._draw_plots([(spec, lines) for spec, lines, _ in windows], now, force)
        sent |= self.images.draw(run)
        sent |= self.extra.draw(run, now)
        self._drawn(now)
        self.sent_steps = self._sent_steps(windows)
        self._drawn_version = run.version
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

    # The windows that show a run, in display order (the snapshot page lays them out alike).
    _windows = staticmethod(run_windows)

    def _draw_status(self, run: RunData, now: float) -> bool:
        refresh = refresh_after(run.status)
        drawn = layout.STATUS_WIN in self._texts
        if drawn and not run.status_changed and now - self._status_at < refresh:
            return False
        html = status_view(run.status, run.meta, run.eta, now).html()
        run.status_changed = False
        self._status_at = now
        return self._text(
            layout.STATUS_WIN,
            html,
            f"{run.name}: status",
            width=layout.STATUS_WIDTH,
            height=self.header_height,
        )


# --- messages ------------------------------------------------------------------


def run_start(run: RunData) -> float | None:
    """When ``run`` started, as far as its series know: relative time counts from there."""
    starts = [s.first_time for s in run.series.values() if s.first_time is not None]
    return min(starts, default=None)
