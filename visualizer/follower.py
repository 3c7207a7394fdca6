"""The follow loop: replay each run's history, then send what is new as it lands.

Local stores wake the loop through file events (watchdog: inotify on Linux),
and a quiet one is still read every :data:`EVENTS_IDLE_INTERVAL` in case an
event was missed; without events (NFS, Lustre, FUSE) local stores are polled
every ``poll_interval``. S3 stores are polled, backing off while nothing changes.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapshot_store.reader import StoreReader
from visualizer.model.decimate import check_max_points
from visualizer.model.rundata import RunData
from visualizer.panes.compare import Selection
from visualizer.panes.display import DEFAULT_MAX_POINTS
from visualizer.panes.screen import OnSent, Screen
from visualizer.panes.view import ViewSettings
from visualizer.server.client import VisdomClient
from visualizer.sources.download import CsvDownloads
from visualizer.sources.runs import LocalRuns, RunSpec, S3Runs, env_name, locate
from visualizer.sources.s3 import S3ReadError
from visualizer.sources.watch import FileEvents

log = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = 1.0
# S3 back-off ceiling: an idle run then costs about one LIST a minute, ~60 an hour.
DEFAULT_MAX_IDLE_INTERVAL = 60.0
WAIT_LOG_INTERVAL = 10.0
# A long history is replayed this many bytes of segments at a time: each page
# becomes compact arrays before the next is read, so memory stays flat.
PAGE_BYTES = 2 << 20
TICK = 1.0  # status panels and restart probes want a look at least this often
# With file events, a quiet local store (and the root, for new runs) is still
# read this often: a hundred finished runs then cost a few reads a second, not a hundred.
EVENTS_IDLE_INTERVAL = 10.0


class NoRunsError(RuntimeError):
    """Nothing to show at ``--pickle-dir`` (raised by :meth:`Follower.run_once`)."""


class PollSchedule:
    """When to poll a source next: soon after a change, ever later while nothing changes."""

    def __init__(self, interval: float, max_interval: float | None = None) -> None:
        self.interval = interval
        self.max_interval = max(interval, max_interval if max_interval is not None else interval)
        self.delay = interval
        self.due = 0.0

    def record(self, changed: bool, now: float) -> None:
        """Set the next due time after a poll that found (or did not find) news."""
        self.delay = self.interval if changed else min(self.delay * 2, self.max_interval)
        self.due = now + self.delay


@dataclass
class _Feed:
    """One followed run: reader, data, the visdom env it is drawn in, schedule."""

    spec: RunSpec
    reader: StoreReader
    data: RunData
    env: str
    schedule: PollSchedule
    replayed: bool = False
    failing: str | None = field(default=None)


class Follower:
    """Follows every run under ``location`` (the ``--pickle-dir`` value: a path or an
    ``s3://`` URL) into visdom.

    Call :meth:`run_once` for a single pass, or :meth:`run` to follow until
    :meth:`stop` (thread-safe). It reads the runs and hands them to its
    :attr:`screen`, which draws them; ``on_page(env)`` is called with the
    screen's ``page_env`` after the pass that first draws it, and again whenever it changes.
    """

    def __init__(
        self,
        location: str,
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
    ) -> None:
        check_max_points(max_points)
        if not (math.isfinite(poll_interval) and poll_interval > 0):  # NaN would spin the loop
            raise ValueError(
                f"poll_interval (--poll-interval) must be a finite number above 0, not {poll_interval}"
            )
        self.runs: LocalRuns | S3Runs = locate(location, s3_client)
        self.client = client
        self.env_prefix = env
        self.poll_interval = poll_interval
        self.max_idle_interval = max_idle_interval
        # --runs: only matching runs are followed; the comparison page can narrow them further.
        self.selection = selection if selection is not None else Selection()
        self.unmatched: set[str] = set()  # runs found that --runs leaves out
        self.feeds: dict[str, _Feed] = {}
        self.screen = Screen(
            client,
            str(self.runs),
            max_points=max_points,
            view=view,
            selection=self.selection,
            downloads=downloads,
            on_sent=on_sent,
            on_page=on_page,
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._watch = FileEvents(self.runs, self._wake, poll_interval, enabled=use_watchdog)
        self._last_wait_log = -WAIT_LOG_INTERVAL
        self._next_discovery = 0.0
        self._last_discovery = -math.inf
        # The last S3 failure (bad credentials, a missing bucket): --once reports
        # it instead of calling the store empty; following logs it and retries.
        self.source_error: S3ReadError | None = None
        self._once = False
        # Called with the time after each pass over the runs (alerts look at them then).
        self.on_pass: Callable[[float], None] | None = None

    # --- public -------------------------------------------------------------------

    def run_once(self) -> None:
        """Read every run completely and draw it.

        Raises S3ReadError when S3 failed and nothing could be read, else
        NoRunsError if there is nothing.
        """
        self._once = True  # no "retrying": the caller reports what failed
        self._discover()
        now = time.time()
        for feed in self.feeds.values():
            self._poll(feed, now)
        if not any(f.data.has_data for f in self.feeds.values()):
            if self.source_error is not None:
                raise self.source_error
            if not self.feeds and self.unmatched:
                raise NoRunsError(self.selection.none_match(self.runs, self.unmatched))
            if not self.feeds:
                raise NoRunsError(f"no snapshot store found: waiting for {self.runs.waiting_for()}")
            raise NoRunsError(f"nothing to show yet at {self.runs}: the store is empty")
        self._sync(time.time(), raise_errors=True, force=True)
        self._passed()
        self.screen.announce_page()

    def run(self) -> None:
        """Follow until :meth:`stop`; visdom and source errors are logged and retried."""
        try:
            while not self._stop.is_set():
                self._watch.start()
                now = time.time()
                woken = self._wake.is_set()
                self._wake.clear()
                # New runs show up within a second: at once through a file event
                # (at most once a TICK), else at the next scan.
                if now >= self._next_discovery or (
                    woken and self._watch.active and now >= self._last_discovery + TICK
                ):
                    self._last_discovery = now
                    self._next_discovery = now + (
                        EVENTS_IDLE_INTERVAL
                        if self._watch.active
                        else min(TICK, self.poll_interval)
                    )
                    self._discover()
                self._poll_due(now, woken)
                self._sync(time.time())
                self._passed()
                self.screen.announce_page()
                self._wake.wait(self._timeout(time.time()))
            self._final_pass()
        finally:
            self._watch.stop()

    def _final_pass(self) -> None:
        # What a trainer wrote just before asking us to stop (its final status,
        # its last points, even a run not seen yet) still gets drawn.
        self._discover()
        now = time.time()
        for feed in self.feeds.values():
            self._poll(feed, now)
        self._sync(time.time(), force=True)
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

    # --- discovery and polling -------------------------------------------------------

    def _quiet_interval(self) -> float:
        """How often a local store with no news is read: rarely while file events tell of news."""
        return EVENTS_IDLE_INTERVAL if self._watch.active else self.poll_interval

    def _discover(self) -> None:
        try:
            specs = self.runs.discover()
        except S3ReadError as err:
            self._source_failed(err)
            return
        for spec in specs:
            if not self.selection.matches(spec.name):
                self.unmatched.add(spec.name)
                continue
            if spec.name in self.feeds:
                continue
            env = env_name(spec.name, self.env_prefix, self.runs.multi)
            schedule = PollSchedule(
                self.poll_interval,
                self.max_idle_interval if spec.remote else self._quiet_interval(),
            )
            self.feeds[spec.name] = _Feed(
                spec, StoreReader(spec.source), RunData(spec.name), env, schedule
            )
            self.screen.add_run(spec.name, env, spec.source.describe(""))
            log.info(
                "following run %r from %s in visdom env %r",
                spec.name,
                spec.source.describe(""),
                env,
            )
        if self.runs.multi and self.screen.compare is None and len(self.feeds) >= 2:
            env = env_name("compare", self.env_prefix or Path(str(self.runs)).name, True)
            self.screen.add_comparison(env)

    def _poll_due(self, now: float, woken: bool) -> None:
        for feed in self.feeds.values():
            if now >= feed.schedule.due or (woken and not feed.spec.remote):
                self._poll(feed, now)
        if (
            not any(f.data.has_data for f in self.feeds.values())
            and now - self._last_wait_log >= WAIT_LOG_INTERVAL
        ):
            self._last_wait_log = now
            log.info("waiting for %s", self.runs.waiting_for())

    def _poll(self, feed: _Feed, now: float) -> None:
        started = time.perf_counter()
        changed = False
        try:
            while True:  # a long history arrives a page at a time; drain it before drawing
                changed |= feed.data.apply(feed.reader.poll(max_bytes=PAGE_BYTES))
                if not feed.reader.more:
                    break
        except Exception as err:  # network, permissions: keep the other runs going
            if isinstance(err, S3ReadError):
                self.source_error = err
                if self._once:
                    return
            message = str(err) if isinstance(err, S3ReadError) else f"{type(err).__name__}: {err}"
            if message != feed.failing:
                log.warning(
                    "run %r: can not read %s (%s); retrying",
                    feed.spec.name,
                    feed.spec.source.describe(""),
                    message,
                )
                feed.failing = message
            feed.schedule.record(False, now)
            return
        if feed.failing:
            log.info("run %r: %s readable again", feed.spec.name, feed.spec.source.describe(""))
            feed.failing = None
        feed.schedule.record(changed, now)
        if changed and not feed.replayed:
            feed.replayed = True
            log.info(
                "run %r: read %d points of %d series in %.2f s",
                feed.spec.name,
                feed.data.points,
                len(feed.data.series),
                time.perf_counter() - started,
            )

    def _source_failed(self, err: S3ReadError) -> None:
        """Log an S3 failure met finding the runs, once until it changes."""
        if not self._once and (self.source_error is None or str(self.source_error) != str(err)):
            log.warning("%s; retrying", err)
        self.source_error = err

    # --- drawing ------------------------------------------------------------------

    def _sync(self, now: float, raise_errors: bool = False, force: bool = False) -> None:
        """Hand every run to the screen, which draws what is new."""
        runs = {name: feed.data for name, feed in self.feeds.items()}
        self.screen.sync(runs, now, raise_errors, force)

    def _timeout(self, now: float) -> float:
        dues = [f.schedule.due for f in self.feeds.values()]
        due = min(dues) if dues else now + self.poll_interval
        # Held-back points go out on time.
        timeout = min(due - now, TICK, self.poll_interval, self.screen.redraw_wait())
        return max(0.005, timeout)
