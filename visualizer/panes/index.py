"""visdom's ``main`` env, where the server's bare URL lands: an index of the followed runs.

One text pane per visualizer (its id names the followed directory, so two
visualizers on one server keep one pane each): every run linked to its env,
with its state and when it last reported, and the comparison env when there is one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime

from visualizer import markup
from visualizer.layout import safe_id
from visualizer.markup import Html
from visualizer.model.rundata import RunData
from visualizer.model.status import is_stale
from visualizer.server.client import VisdomClient

from .fold import MAX_WINDOWS, plot_windows

INDEX_ENV = "main"
# The table is rebuilt at most this often; it is re-sent only when it changed.
REFRESH_S = 2.0
_CELL = ' style="padding: 2px 16px 2px 0; text-align: left"'


def last_report(run: RunData) -> float | None:
    """When ``run`` last reported anything: its status document or its newest point."""
    times = [s.last_time for s in run.series.values()]
    if run.status is not None and isinstance(run.status.get("updated"), int | float):
        times.append(float(run.status["updated"]))
    known = [t for t in times if t is not None]
    return max(known, default=None)


def _state(run: RunData, now: float) -> str:
    if run.status is None:
        return "no status yet"
    state = str(run.status.get("state", "unknown"))
    state = f"{state} (silent)" if is_stale(run.status, now) else state
    windows = plot_windows(run.series)
    return f"{state}; {windows:,} plot windows folded" if windows > MAX_WINDOWS else state


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    moment = datetime.fromtimestamp(stamp)
    shown = "%H:%M:%S" if moment.date() == datetime.now().date() else "%Y-%m-%d %H:%M:%S"
    return moment.strftime(shown)


class IndexDisplay:
    """The followed runs' index pane in the ``main`` env, kept up to date."""

    def __init__(self, client: VisdomClient, name: str) -> None:
        self.client = client
        self.name = name
        self.win = f"runs_{safe_id(name)}"
        self._html: str | None = None
        self._built = 0.0
        self._versions: list[tuple[str, int]] = []  # each run's version in the index shown
        self.compare_env: str | None = None  # the comparison env, linked above the runs

    @property
    def pending(self) -> bool:
        """Never: the index holds nothing back."""
        return False

    def invalidate(self) -> None:
        """Forget what the server shows (a restarted server): the next sync re-sends it."""
        self._html = None

    def sync(
        self, runs: Iterable[tuple[str, RunData]], now: float | None = None, force: bool = False
    ) -> bool:
        """Re-send the index if it changed; ``runs`` are (env, data) pairs. True when sent."""
        now = time.time() if now is None else now
        if self._html is not None and now - self._built < REFRESH_S and not force:
            return False
        runs = list(runs)
        versions = [(env, run.version) for env, run in runs]
        if self._html is not None and not force and not self._may_differ(versions, runs, now):
            return False
        self._built, self._versions = now, versions
        page = self.html(runs, self.compare_env, now)
        if page == self._html:
            return False
        message = {
            "data": [{"content": page, "type": "text"}],
            "win": self.win,
            "eid": INDEX_ENV,
            # As tall as its rows, up to a screenful (then it scrolls).
            "opts": {
                "title": f"runs: {self.name}",
                "width": 560,
                "height": min(600, 90 + 22 * len(runs)),
            },
        }
        self.client.post("events", message)
        self._html = page
        return True

    def _may_differ(
        self, versions: list[tuple[str, int]], runs: list[tuple[str, RunData]], now: float
    ) -> bool:
        """Whether the index can read otherwise than when built: news from a run, a
        running run that may have fallen silent, or a new day (dates show then)."""
        return (
            versions != self._versions
            or any((run.status or {}).get("state") == "running" for _, run in runs)
            or datetime.fromtimestamp(now).date() != datetime.fromtimestamp(self._built).date()
        )

    def html(
        self, runs: Iterable[tuple[str, RunData]], compare_env: str | None, now: float
    ) -> Html:
        """The index as HTML: a row per run, in name order."""
        endpoint = self.client.endpoint

        def link(env: str, text: str) -> Html:
            return markup.link(endpoint.env_url(env), text)

        rows = [
            markup.row(
                [link(env, run.name), _state(run, now), _when(last_report(run))], attrs=_CELL
            )
            for env, run in sorted(runs, key=lambda item: item[1].name)
        ]
        head = ["All runs overlaid: ", link(compare_env, compare_env)] if compare_env else []
        table = markup.element(
            "table", markup.row(["run", "state", "last update"], "th", _CELL), *rows
        )
        return markup.join(markup.element("p", *head) if head else "", table)
