"""The follow loop: know every run, replay the followed runs' history, then send what is new.

Every run under ``--pickle-dir`` is known by its summary, read in the background
(:mod:`visualizer.sources.catalog`), and listed in the runs table; the followed
runs (:mod:`visualizer.runset` says which) are read whole and drawn. Local stores
wake the loop through file events (watchdog: inotify on Linux), and a quiet one
is still read every :data:`EVENTS_IDLE_INTERVAL` in case an event was missed; without
events (NFS, Lustre, FUSE) every ``poll_interval``. S3 stores are polled, backing off.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from visualizer.model.decimate import check_max_points
from visualizer.panes.compare import DEFAULT_COMPARE, Selection
from visualizer.panes.display import DEFAULT_MAX_POINTS
from visualizer.panes.screen import OnSent, Screen
from visualizer.panes.view import ViewSettings
from visualizer.sources.catalog import Catalog, Entry
from visualizer.sources.download import CsvDownloads
from visualizer.sources.runs import LocalRuns, env_name, locate
from visualizer.sources.s3 import S3ReadError
from visualizer.sources.s3_runs import S3Runs
from visualizer.sources.watch import FileEvents
from visualizer.visdom_client import VisdomClient

from .feeds import Feed, PollSchedule, check_poll_interval
from .runset import DEFAULT_MEMORY_BUDGET_MB, RunSet

__all__ = ["Follower", "NoRunsError", "PollSchedule"]

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_MAX_IDLE_INTERVAL = 60.0  # S3 back-off ceiling: an idle run's LIST about once a minute
WAIT_LOG_INTERVAL = 10.0
S3_DISCOVERY_INTERVAL = 8.0  # an S3 prefix listed for new runs: a request per 1,000 runs
TICK = 1.0  # status panels and restart probes want a look at least this often
READING_TICK = 0.2  # the loop's pace while summaries come in
# With file events, a quiet local store (and the root, for new runs) is still read this
EVENTS_IDLE_INTERVAL = 10.0  # often: a hundred finished runs cost a few reads a second
# A local root's listing for new runs takes at most this share of a core (10,000 runs' folders,
# 30-60 ms to list, are listed every 15-30 s, not every 1 or 10 s).
DISCOVERY_SHARE = 0.002


class NoRunsError(RuntimeError):
    """Nothing to show at ``--pickle-dir`` (raised by :meth:`Follower.run_once`)."""


class Follower:
    """Follows every run under ``root`` (the ``--pickle-dir`` value: a path or an ``s3://``
    URL) into visdom.

    Call :meth:`run_once` for a single pass, or :meth:`run` to follow until
    :meth:`stop` (thread-safe). Every run is known by its summary (its
    :attr:`catalog`) and listed in the runs table; the runs in :attr:`feeds` are
    read whole and drawn. ``on_page(env)`` is called with the screen's
    ``page_env`` after the pass that first draws it, and again whenever it changes.
    """

    def __init__(
        self,
        root: str,
        client: VisdomClient,
        *,
        env: str | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        max_points: int = DEFAULT_MAX_POINTS,
        max_idle_interval: float = DEFAULT_MAX_IDLE_INTERVAL,
        use_watchdog: bool = True,
        s3_client: Any = None,
        on_sent: OnSent | None = None,
        on_page: Callable[[str], None] | None = None,
        view: ViewSettings | None = None,
        selection: Selection | None = None,
        downloads: CsvDownloads | None = None,
        compare: int = DEFAULT_COMPARE,
        memory_budget_mb: float = DEFAULT_MEMORY_BUDGET_MB,
    ) -> None:
        check_max_points(max_points)
        check_poll_interval(poll_interval)
        self.runs: LocalRuns | S3Runs = locate(root, s3_client)
        self.client, self.env_prefix, self.downloads = client, env, downloads
        self.poll_interval, self.max_idle_interval = poll_interval, max_idle_interval
        self.catalog = Catalog(self.runs, poll_interval, max_idle_interval, compare)
        # --compare: how many runs are overlaid (the comparison page may change it).
        selection = replace(selection if selection is not None else Selection(), count=compare)
        self.screen = Screen(
            client,
            str(self.runs),
            max_points=max_points,
            view=view,
            selection=selection,
            downloads=downloads,
            on_sent=on_sent,
            on_page=on_page,
            link=self._link,
        )
        self.runset = RunSet(
            self.catalog,
            self.screen,
            selection,
            env_of=self.env_of,
            schedule=self._schedule,
            compare=compare,
            memory_budget_mb=memory_budget_mb,
        )
        if downloads is not None:
            downloads.on_open = self._opened_from_page
        self._wake, self._stop = threading.Event(), threading.Event()
        self._watch = FileEvents(self.catalog, self._wake, poll_interval, enabled=use_watchdog)
        self._watching, self._once = False, False  # file events arrive; in a run_once pass
        self._last_wait_log, self._last_discovery = -WAIT_LOG_INTERVAL, -math.inf
        self._next_discovery = 0.0
        # The last S3 failure (bad credentials, no bucket): --once reports it; following retries.
        self.source_error: S3ReadError | None = None
        # Called with the time after each pass over the runs (alerts look at them then).
        self.on_pass: Callable[[float], None] | None = None

    @property
    def selection(self) -> Selection:
        """``--runs`` and ``--sort-by``: which runs are known, and how they are compared."""
        return self.runset.selection

    @property
    def feeds(self) -> dict[str, Feed]:
        """The followed runs (read whole and drawn), by name."""
        return self.runset.feeds

    @property
    def known(self) -> dict[str, Entry]:
        """Every run known (by its summary) that ``--runs`` selects, by name."""
        return self.runset.known

    # --- public -------------------------------------------------------------------

    def run_once(self) -> None:
        """Read every run completely and draw it.

        Raises S3ReadError when S3 failed and nothing could be read, else
        NoRunsError if there is nothing.
        """
        self._once = True  # no "retrying": the caller reports what failed
        try:
            try:
                self.catalog.scan()
            except S3ReadError as err:
                self.source_error = err
            self.catalog.release()
            while not self.catalog.complete:
                self._take_reads(wait=1.0)
            self._take_reads()
        finally:
            self.catalog.close()
        now = time.time()
        for feed in self.feeds.values():
            self._poll(feed, now)
        if not any(f.data.has_data for f in self.feeds.values()):
            if self.source_error is not None:
                raise self.source_error
            if not self.known and self.runset.unmatched:
                raise NoRunsError(self.selection.none_match(self.runs, self.runset.unmatched))
            if not self.known:
                raise NoRunsError(f"no snapshot store found: waiting for {self.runs.waiting_for()}")
            raise NoRunsError(f"nothing to show yet at {self.runs}: the store is empty")
        self._draw(time.time(), raise_errors=True, force=True)
        self._passed()
        self.screen.announce_page()

    def run(self) -> None:
        """Follow until :meth:`stop`; visdom and source errors are logged and retried."""
        try:
            while not self._stop.is_set():
                if self._watch.active and not self._watching:  # set up in the background
                    self._watching = True
                    for feed in self.feeds.values():  # now read rarely while quiet
                        feed.schedule = self._schedule(feed.spec.remote)
                now = time.time()
                woken = self._wake.is_set()
                self._wake.clear()
                if self._discovery_due(now, woken):
                    self._scan()
                self._take_reads()
                self.runset.open_wanted()
                self._poll_due(now, woken)
                following = {feed.key for feed in self.feeds.values()}
                self.catalog.recheck(time.monotonic(), following)
                self._draw(time.time())
                self._passed()
                self.screen.announce_page()
                self.catalog.release()  # the prefetch's reads, once the first page is drawn
                if self.catalog.complete:  # its walk of the tree slowed the first read and draw
                    self._watch.start()
                self._wake.wait(self._timeout(time.time()))
            self._final_pass()
        finally:
            self._watch.stop()
            self.catalog.close()

    def _final_pass(self) -> None:
        # What a trainer wrote just before the stop (its status, last points, a new run) is drawn.
        self._scan()
        first = self.catalog.total <= 1 and not self.catalog.complete  # a run not seen yet
        self._take_reads(wait=1.0 if first else 0.0)
        now = time.time()
        for feed in self.feeds.values():
            self._poll(feed, now)
        self._draw(time.time(), force=True)
        self._passed()

    def _passed(self) -> None:
        if self.on_pass is not None:
            self.on_pass(time.time())

    def stop(self) -> None:
        """Ask :meth:`run` to return after a last poll (from any thread)."""
        self._stop.set()
        self._wake.set()

    def wake(self) -> None:
        """Poll local stores now (what a file event does)."""
        self._wake.set()

    def want(self, name: str) -> threading.Event | None:
        """Read and draw run ``name`` (from any thread): an event set once its env is drawn,
        None when no such run is known."""
        drawn = self.runset.want(name)
        self._wake.set()
        return drawn

    def prefetch(self) -> None:
        """Start finding and reading the runs now, in the background (while visdom starts)."""
        self.catalog.prefetch()

    def env_of(self, name: str) -> str:
        """The visdom env run ``name`` is drawn in."""
        return env_name(name, self.env_prefix, self.runs.multi)

    # --- discovery and polling -------------------------------------------------------

    def _link(self, name: str) -> str:
        """Where the runs table's link for run ``name`` goes: through the loopback server,
        which has the run read first, while following; else straight to its env."""
        if self.downloads is not None and not self.screen.draws_page(name):
            return self.downloads.open_url(name)
        return self.client.endpoint.env_url(self.env_of(name))

    def _opened_from_page(self, name: str) -> tuple[threading.Event, str] | None:
        drawn = self.want(name)
        return None if drawn is None else (drawn, self.client.endpoint.env_url(self.env_of(name)))

    def _schedule(self, remote: bool) -> PollSchedule:
        quiet = EVENTS_IDLE_INTERVAL if self._watch.active else self.poll_interval
        return PollSchedule(self.poll_interval, self.max_idle_interval if remote else quiet)

    def _discovery_due(self, now: float, woken: bool) -> bool:
        # New runs show up within a second: at once through a file event
        # (at most once a TICK), else at the next scan.
        if not (
            now >= self._next_discovery
            or (woken and self._watch.active and now >= self._last_discovery + TICK)
        ):
            return False
        self._last_discovery = now
        if isinstance(self.runs, S3Runs):
            pause = S3_DISCOVERY_INTERVAL
        else:
            pause = EVENTS_IDLE_INTERVAL if self._watch.active else min(TICK, self.poll_interval)
            pause = max(pause, self.catalog.scan_took / DISCOVERY_SHARE)
        self._next_discovery = now + pause
        return True

    def _scan(self) -> None:
        if isinstance(self.runs, S3Runs):  # a person looks at the runs table: new runs sooner
            self.runs.watched = self.screen.index.on_a_page
        try:
            self.runset.scanned(self.catalog.scan())
        except S3ReadError as err:
            self._source_failed(err)

    def _take_reads(self, wait: float = 0.0) -> None:
        self.runset.take(self.catalog.collect(wait))
        if self.runs.multi and self.screen.compare is None and len(self.known) >= 2:
            env = env_name("compare", self.env_prefix or Path(str(self.runs)).name, True)
            self.screen.add_comparison(env)

    def _due(self, feed: Feed, pages: frozenset[str] | None) -> float:
        """When ``feed`` is read next: an S3 run of a sweep that ended, when the prefix's listing
        says it changed; else by where the open ``pages`` (their envs) show it (READ_GAPS)."""
        if not (feed.spec.remote and self.runs.multi):
            return feed.schedule.due
        if feed.ended:
            return math.inf
        return feed.schedule.due_for(self.screen.shown_on(feed.data.name, pages))

    def _poll_due(self, now: float, woken: bool) -> None:
        pages = self.client.events.pages
        for feed in self.feeds.values():
            if feed.spec.remote and feed.ended and self.runs.multi:
                if self.catalog.changed(feed.key):  # it resumed
                    self._poll(feed, now)
            elif now >= self._due(feed, pages) or (woken and not feed.spec.remote):
                self._poll(feed, now)
        waited = now - self._last_wait_log >= WAIT_LOG_INTERVAL
        if not self.known and self.catalog.complete and waited:
            self._last_wait_log = now
            log.info("waiting for %s", self.runs.waiting_for())

    def _poll(self, feed: Feed, now: float) -> None:
        try:
            changed = feed.poll(now)
        except S3ReadError as err:
            self.source_error = err
            if not self._once:
                feed.failed(err, now)
            return
        if changed:
            self.catalog.refresh(feed.key, feed.summary())

    def _source_failed(self, err: S3ReadError) -> None:
        """Log an S3 failure met finding the runs, once until it changes."""
        if not self._once and (self.source_error is None or str(self.source_error) != str(err)):
            log.warning("%s; retrying", err)
        self.source_error = err

    # --- drawing ------------------------------------------------------------------

    def _draw(self, now: float, raise_errors: bool = False, force: bool = False) -> None:
        """Hand every run to the screen, which draws what is new."""
        runs = {name: feed.data for name, feed in self.feeds.items()}
        self.screen.draw(runs, now, raise_errors, force, self.runset.table_state(now))
        self.runset.drawn()

    def _timeout(self, now: float) -> float:
        pages = self.client.events.pages
        dues = [self._due(f, pages) for f in self.feeds.values()]
        due = min(dues) if dues else now + self.poll_interval
        # Held-back points go out on time; summaries being read are taken a few times a second.
        pace = READING_TICK if not self.catalog.complete else TICK
        timeout = min(due - now, pace, self.poll_interval, self.screen.redraw_wait())
        return max(0.005, timeout)
