"""The display loop: every pane the follower's runs are drawn in, and visdom's outages.

The :class:`~visualizer.follower.Follower` reads the sources and hands each run
here; a :class:`Screen` draws it in its env (a :class:`~visualizer.panes.display.RunDisplay`),
overlays the runs in a comparison env once there are several, and lists them in
the runs index. Each of these is a :class:`~visualizer.panes.pane.Pane`. While
visdom does not answer, draws are spaced out and every pane is rebuilt when it is back.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from visualizer import markup
from visualizer.feeds import Shown
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.sources.download import CsvDownloads, export_command
from visualizer.visdom_client import VisdomClient, VisdomRequestError, VisdomUnavailableError

from .compare import CompareDisplay, Selection
from .display import RunDisplay
from .pane import Pane
from .plotwindow import MIN_REDRAW_INTERVAL
from .run_rows import RunsTableState
from .runs_table import INDEX_ENV, RunsTable
from .view import ViewSettings

log = logging.getLogger(__name__)

# Called after a run's display sent something: (run, last step on the server per series, when).
OnSent = Callable[[str, dict[SeriesKey, int], float], None]


def download_link(downloads: CsvDownloads | None, run: str, store: str) -> markup.Html:
    """HTML getting ``run``'s scalars as CSV: a link while following, else the export command."""
    if downloads is None:
        command = export_command(store, run)
        return markup.element("p", "scalars as CSV: ", markup.element("code", command))
    url = downloads.offer(run, store)
    csv = markup.link(url, "download the scalars as CSV", " download")
    page = downloads.one_file_url(run)
    if page is None:
        return markup.element("p", csv)
    return markup.element("p", csv, " · ", markup.link(page, "this page as one file", " download"))


def sweep_links(downloads: CsvDownloads | None, root: str) -> markup.Html:
    """HTML getting the whole sweep at ``root``: every run's points and the runs table as CSV,
    links while following, else the export commands."""
    if downloads is None:
        points, table = export_command(root, "all-runs"), export_command(root, "runs-table", "runs")
        return markup.element(
            "p", "all runs as CSV: ", markup.element("code", points),
            "; the runs table: ", markup.element("code", table),
        )  # fmt: skip
    points_url, table_url = downloads.offer_sweep(root)
    page = downloads.one_file_url()
    one_file = (
        ("", "") if page is None else
        (" · ", markup.link(page, "this page and the comparison as one file", " download"))
    )  # fmt: skip
    return markup.element(
        "p", markup.link(points_url, "download all runs", " download"), " (every point, CSV) · ",
        markup.link(table_url, "download the runs table", " download"), " (a row a run, CSV)",
        *one_file,
    )  # fmt: skip


class Screen:
    """The panes of the followed runs, kept equal to their data (see the module)."""

    def __init__(
        self,
        client: VisdomClient,
        index_name: str,
        *,
        max_points: int,
        view: ViewSettings | None = None,
        selection: Selection | None = None,
        downloads: CsvDownloads | None = None,
        on_sent: OnSent | None = None,
        on_page: Callable[[str], None] | None = None,
        link: Callable[[str], str] | None = None,
    ) -> None:
        self.client = client
        self.max_points = max_points
        self.view = view  # how every env draws its plots at first (its page can change it)
        self.selection = selection if selection is not None else Selection()
        self.downloads = downloads  # serves each run's CSV while following
        self.on_sent = on_sent
        self.on_page = on_page
        self.runs: dict[str, RunDisplay] = {}
        self.shown: set[str] = set()  # among many runs: those whose own page was opened
        self.compare: CompareDisplay | None = None
        self.compared: list[str] | None = None  # the runs overlaid (None: every one drawn)
        self.many = False  # more runs than are compared: the runs table is the page to look at
        self.baseline: str | None = None  # the run the others are measured against (--baseline)
        # Told a baseline chosen on the page (the runs pane), to remember it as --baseline is.
        self.remember_baseline: Callable[[str | None], None] | None = None
        # In visdom's main env: every run, each linked to its page.
        self.link = link or self._env_link
        self.index = RunsTable(client, index_name, self.link)
        self.index.on_baseline = self.choose_baseline
        self.index.exports = sweep_links(downloads, index_name)
        self._announced: str | None = None
        self._down_since: float | None = None
        self._retry_at = 0.0

    def choose_baseline(self, name: str | None) -> None:
        """Measure the runs against run ``name`` from now on (None: no baseline)."""
        self.baseline = name
        if self.remember_baseline is not None:
            self.remember_baseline(name)

    def add_run(self, name: str, env: str, store: str) -> None:
        """Draw run ``name`` (read from ``store``) in visdom env ``env`` from now on."""
        display = RunDisplay(self.client, env, self.max_points, self.view)
        display.extra.run_link = self._env_link  # a used artifact's run
        # Back to every run: the page a run's link came from, one click away as in W&B.
        back = markup.link(self.client.endpoint.env_url(INDEX_ENV), "all runs")
        display.download = markup.join(
            markup.element("p", back), download_link(self.downloads, name, store)
        )
        self.runs[name] = display

    def draws_page(self, name: str) -> bool:
        """Whether run ``name``'s own page is drawn: every followed run's, but among many runs
        (the runs table's links reach a run through the loopback server, which has it drawn
        first) only once opened: a hundred compared runs' pages kept visdom from sending the
        comparison's windows to the page a person opened first."""
        return name in self.runs and (not self.many or self.downloads is None or name in self.shown)

    def show(self, name: str) -> None:
        """Draw run ``name``'s own page from now on (the page opened it)."""
        self.shown.add(name)

    def _env_link(self, name: str) -> str:
        display = self.runs.get(name)
        return self.client.endpoint.env_url(display.env if display else name)

    def remove_run(self, name: str) -> None:
        """Stop drawing run ``name``; its env goes from the server too (its memory with it)."""
        display = self.runs.pop(name)
        self.shown.discard(name)
        try:
            self.client.post("delete_env", {"eid": display.env})
        except (VisdomUnavailableError, VisdomRequestError) as err:
            log.debug("could not delete env %r: %s", display.env, err)

    def add_comparison(self, env: str) -> None:
        """Overlay the runs in visdom env ``env``, with a link to each run's own env."""
        links = {name: self.link(name) for name in self.runs}
        self.compare = CompareDisplay(
            self.client, env, self.max_points, self.view, self.selection, links
        )
        page = self.downloads.one_file_url() if self.downloads is not None else None
        if page is not None:  # the sweep's file opens on its comparison too
            link = markup.link(page, "this page and the runs table as one file", " download")
            self.compare.exports = markup.element("p", link)
        log.info("comparing the runs in visdom env %r", env)

    def shown_on(self, name: str, pages: frozenset[str] | None) -> Shown:
        """Where the ``pages`` open (their envs; None: not known, any may be) show run ``name``:
        its curves (its own page, or the comparison overlaying it), its row in the runs table
        alone, or nowhere (None)."""
        if pages is None:
            return "curves"
        display = self.runs.get(name)
        compared = self.compared is None or name in self.compared
        if (display is not None and display.env in pages) or (
            self.compare is not None and compared and self.compare.env in pages
        ):
            return "curves"
        return "row" if INDEX_ENV in pages else None

    @property
    def page_env(self) -> str | None:
        """The env to look at: the runs table when only some runs are compared, the comparison
        env when there are several runs, else the run's env.

        None until a run is found (a store that does not exist yet).
        """
        if self.many:
            return INDEX_ENV
        if self.compare is not None:
            return self.compare.env
        if len(self.runs) == 1:
            return next(iter(self.runs.values())).env
        return None

    def announce_page(self) -> None:
        """Tell ``on_page`` the env to look at, when it is first known and when it changes."""
        env = self.page_env
        if env is None or env == self._announced:
            return
        self._announced = env
        if self.on_page is not None:
            self.on_page(env)

    def redraw_wait(self) -> float:
        """How long the loop may sleep before held-back points are due: inf when none are."""
        pending = any(pane.pending for pane in self._panes())
        return MIN_REDRAW_INTERVAL / 2 if pending else math.inf

    def draw(
        self,
        runs: Mapping[str, RunData],
        now: float,
        raise_errors: bool = False,
        force: bool = False,
        table: RunsTableState | None = None,
    ) -> None:
        """Bring every pane up to date with ``runs`` (by name) and the runs ``table``; visdom
        errors are retried later.

        With ``raise_errors`` visdom's errors propagate instead.
        """
        if self._down_since is not None and now < self._retry_at and not raise_errors:
            return
        try:
            self._draw_panes(runs, now, force, table)
        except (VisdomUnavailableError, VisdomRequestError) as err:
            if raise_errors:
                raise
            self._visdom_failed(err, now)
            return
        if self._down_since is not None:
            log.info("visdom at %s answers again: windows rebuilt from the store", self.client.url)
            self._down_since = None

    def _draw_panes(
        self, runs: Mapping[str, RunData], now: float, force: bool, table: RunsTableState | None
    ) -> None:
        # What a person opens first comes first: the runs table, the comparison, then each
        # run's own page (100 compared runs' pages took 2.6 s before the comparison's plots).
        if table is not None and (table.summaries or table.total):
            pages = self.client.events.pages  # 10,000 rows sorted every 2 s for no page: 2% CPU
            self.index.on_a_page = pages is None or INDEX_ENV in pages
            self.index.compare_env = self.compare.env if self.compare else None
            self.index.baseline = self.baseline
            self.index.draw(table, now, force)
        if self.compare is not None:
            hidden = self.index.hidden  # hidden from the runs pane: in no comparison window
            names = [
                n
                for n in (self.runs if self.compared is None else self.compared)
                if n in runs and n not in hidden
            ]
            self.compare.links = {name: self.link(name) for name in names}
            self.compare.baseline = self.baseline
            self.compare.draw([runs[name] for name in names], now, force)
        for name, display in self.runs.items():
            data = runs[name]
            if not self.draws_page(name):
                continue
            if data.has_data and display.draw(data, now, force) and self.on_sent:
                self.on_sent(name, dict(display.sent_steps), time.time())

    def _visdom_failed(self, err: Exception, now: float) -> None:
        # Whatever the server holds now is unknown: rebuild every window when it is back.
        for pane in self._panes():
            pane.invalidate()
        if self._down_since is None:
            self._down_since = now
            log.warning("%s; will rebuild the windows when it answers", err)
        self._retry_at = now + min(5.0, 0.5 + (now - self._down_since) / 4)

    def _panes(self) -> list[Pane[Any]]:
        compare: list[Pane[Any]] = [self.compare] if self.compare is not None else []
        return [*self.runs.values(), *compare, self.index]
