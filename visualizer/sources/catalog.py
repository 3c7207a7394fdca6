"""Every run under the root, known by its summary: what a runs table of 10,000 runs needs.

A run is known by its ``status.pickle`` (its state and summary, and the name and
options of its ``meta.pickle``, read too for a store written before status repeated
them: :mod:`.summary_read`), read on a pool of threads so that a bucket's first
read fetches in parallel and the follow loop never waits on it.
Its series are read only when a page needs them (the follower opens such a run).
A store without a summary (written before summaries) is read whole once and its
summary computed.

Reading again costs little for a run that ended: a local store's status is looked at
every :data:`ENDED_RECHECK_S` (a resumed run; file events watch only the runs not ended),
less often where that sweep would take more than :data:`SWEEP_SHARE` of a core; an S3
prefix's objects are walked a page a minute to see which status changed
(:meth:`~.s3_runs.S3Runs.status_page`).
A run still running is re-read as its status changes (a file event), polled with back-off.
"""

from __future__ import annotations

import logging
import queue
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from snapshot_store.format.frames import OverBudgetError, StoreError
from snapshot_store.read.store_reader import Source
from visualizer.model.summary import RunSummary, from_documents

from .runs import Found, LocalRuns, RunSpec, name_in
from .s3 import FETCHES_AT_ONCE, S3ReadError
from .s3_runs import S3Runs
from .summary_memory import HELD_FROM, hold, share_strings
from .summary_read import Read, meta_in, read_summary, status_version

log = logging.getLogger(__name__)

# Decoding is Python: a second thread only fought the first and the loop for the GIL. Local
# runs are first read a batch to a task, their reads handed over together: a task and a
# wake of the loop for each run cost a third of reading 10,000 (2.0 s, before 2.7 s).
LOCAL_WORKERS, LOCAL_BATCH = 1, 250

ENDED_RECHECK_S = 60.0  # a local run that ended: a stat a minute (it may resume)
SWEEP_SHARE = 0.002  # of a core, at most: 100,000 runs' stats (0.5 s) every 4 minutes


@dataclass(slots=True)
class Entry:
    """One store under the root: named once its metadata is read."""

    found: Found
    spec: RunSpec | None = None
    summary: RunSummary | None = None
    stored: str | None = None  # the name its metadata records
    meta: dict[str, Any] | None = None  # kept only where status does not repeat it
    version: object = None
    checked: float = 0.0  # monotonic time of its last read
    delay: float = 0.0  # a running run's current poll interval (back-off)
    reading: bool = False
    dirty: bool = False  # a file event said it changed
    error: str | None = None
    refused: bool = False  # its values are over the reader's budget: not followed till it changes


class Refused(Read):
    """A read that met values over the reader's budget (pickle_guard): the store is shown as
    unreadable and not followed, as reading it whole would meet them again, until it changes."""


def read_error(err: Exception) -> str:
    """What a failed read of a store says: a store's and S3's errors name the file already."""
    if isinstance(err, (StoreError, S3ReadError)):
        return str(err)
    return f"{type(err).__name__}: {err}"


Asked = tuple[str, Source, dict[str, Any] | None]  # a store to read: key, source, meta known


class Catalog:
    """The runs under ``runs``' root and their summaries, read in the background."""

    def __init__(
        self, runs: LocalRuns | S3Runs, poll_interval: float, max_interval: float, few: int
    ) -> None:
        self.runs = runs
        self.few = few  # up to this many runs are all followed: none is read whole here
        self.poll_interval = poll_interval
        self.max_interval = max_interval
        self.entries: dict[str, Entry] = {}  # by key, in the order found
        self.version = 0  # bumped whenever a summary changes
        self.scan_took = 0.0  # seconds the last listing for new stores took
        remote = isinstance(runs, S3Runs)
        self._pool = ThreadPoolExecutor(
            FETCHES_AT_ONCE if remote else LOCAL_WORKERS, thread_name_prefix="run-summaries"
        )
        # Reads done, a task's at once: the loop wakes once for a batch, not for each run.
        self._done: queue.SimpleQueue[list[tuple[str, Read]]] = queue.SimpleQueue()
        # Found, not named yet, in the order found (a deque: 100,000 pops from a list's
        # front moved its rest each time).
        self._pending: deque[str] = deque()
        self._live: set[str] = set()  # keys of the runs whose summary says they run
        self._touched: set[str] = set()  # keys a file event named since the last recheck
        self._next_sweep = time.monotonic() + ENDED_RECHECK_S  # every run's status looked at
        self._first: Future[int] | None = None  # the first scan, started early
        self._held: list[tuple[list[Asked], bool]] | None = None  # its reads, till release()
        self._closed = False

    # --- what the follower asks ---------------------------------------------------------

    @property
    def total(self) -> int:
        """Stores found."""
        return len(self.entries)

    @property
    def named(self) -> int:
        """Stores whose documents were read (named)."""
        return len(self.entries) - len(self._pending)

    @property
    def live(self) -> set[str]:
        """Keys of the runs whose summary says they have not ended (do not change it)."""
        return self._live

    @property
    def complete(self) -> bool:
        """Whether every store found has been read once."""
        return not self._pending

    def prefetch(self) -> None:
        """Start the first :meth:`scan` on a pool thread (while visdom starts, say): the next
        call of :meth:`scan` takes its result; its reads wait for :meth:`release` (the loop
        draws the first page first: 32 threads fetching from S3 held it off the GIL for 10 s)."""
        if self._first is None and not self.entries:
            self._held = []
            self._first = self._pool.submit(self._scan)

    def release(self) -> None:
        """Start the reads :meth:`prefetch` held, once :meth:`scan` took its result."""
        if self._held is not None and self._first is None:
            held, self._held = self._held, None
            for asked, whole in held:
                self._pool.submit(self._read, asked, whole)

    def scan(self) -> int:
        """Look for new stores (S3ReadError when the listing fails); how many are new."""
        first, self._first = self._first, None
        return first.result() if first is not None else self._scan()

    def _scan(self) -> int:
        began = time.perf_counter()
        new = [found for found in self.runs.found() if found.key not in self.entries]
        self.scan_took = time.perf_counter() - began  # the listing's cost: how often to list
        for found in new:  # all counted first: whether runs are few is known when each is read
            self.entries[found.key] = Entry(found)
        self._pending.extend(found.key for found in new)
        batch = LOCAL_BATCH if isinstance(self.runs, LocalRuns) else 1  # S3's fetch in parallel
        for at in range(0, len(new), batch):
            self._submit(*(found.key for found in new[at : at + batch]))
        return len(new)

    def touched(self, path: str) -> None:
        """A file event for ``path``: its run is read again (from the watchdog thread)."""
        key = self.runs.run_folder(path) if isinstance(self.runs, LocalRuns) else None
        entry = self.entries.get(key) if key is not None else None
        if entry is not None:
            entry.dirty = True
            self._touched.add(entry.found.key)

    def collect(self, wait: float = 0.0) -> list[Entry]:
        """The entries read since the last call, named and summarized (the newly named in the
        order found); waits up to ``wait`` seconds for the first one."""
        changed: list[Entry] = []
        while True:
            try:
                reads = self._done.get(timeout=wait) if wait > 0 else self._done.get_nowait()
            except queue.Empty:
                break
            wait, now = 0.0, time.monotonic()
            for key, read in reads:
                entry = self.entries[key]
                entry.reading, entry.checked = False, now
                if self._apply(entry, read):
                    changed.append(entry)
        named_before = len(self._pending)
        while self._pending and self.entries[self._pending[0]].summary is not None:
            entry = self.entries[self._pending.popleft()]
            entry.spec = self.runs.name(entry.found, entry.stored)
            assert entry.summary is not None
            entry.summary.name = entry.spec.name  # read under no name; no table holds it yet
            changed.append(entry)  # read before, waiting for its turn to be named
        if changed:
            self.version += 1
        if named_before > len(self._pending) and len(self.entries) >= HELD_FROM:
            hold()
        named = {id(entry): entry for entry in changed if entry.spec is not None}
        return list(named.values())

    def recheck(self, now: float, following: set[str]) -> None:
        """Read again the runs that may have changed, except the ``following`` ones (by key)."""
        if isinstance(self.runs, S3Runs) and self.runs.multi:
            self._s3_changes(following)
        # The runs still running and those a file event named; every run at a sweep (one
        # resumed, a missed event): 10,000 runs that ended cost nothing in between.
        touched, self._touched = self._touched, set()
        began, sweep = time.perf_counter(), now >= self._next_sweep
        for key in self.entries if sweep else touched | self._live:
            entry = self.entries[key]
            if entry.reading or entry.summary is None or key in following:
                continue
            if self._due(entry, now):
                self._submit(key)
        if sweep:
            took = time.perf_counter() - began
            self._next_sweep = now + max(ENDED_RECHECK_S, took / SWEEP_SHARE)

    def refresh(self, key: str, summary: RunSummary) -> None:
        """A followed run's summary, from the data its reader holds."""
        entry = self.entries[key]
        if entry.summary != summary:
            self._set(entry, summary)
            self.version += 1

    def close(self) -> None:
        """Stop reading: what is queued is dropped (a stop must not wait for 10,000 reads)."""
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)

    # --- reading --------------------------------------------------------------------------

    def _submit(self, *keys: str) -> None:
        """Read the runs of ``keys`` again, in order, on a pool thread."""
        whole = len(self.entries) > self.few
        asked = []
        for key in keys:
            entry = self.entries[key]
            entry.reading, entry.dirty = True, False
            asked.append((key, entry.found.source, entry.meta))
        if self._held is not None:
            self._held.append((asked, whole))
        else:
            self._pool.submit(self._read, asked, whole)

    def _read(self, asked: list[Asked], whole: bool) -> None:
        reads = []
        for key, source, meta in asked:
            if self._closed:
                return
            try:
                read = read_summary(source, meta, whole, lambda: self._closed)
                if read.summary is not None:
                    share_strings(read.summary)
            except Exception as err:  # a hostile or broken store: the others go on
                # its version, so that it is read again only once it changes
                kind = Refused if isinstance(err, OverBudgetError) else Read
                read = kind(error=read_error(err), version=status_version(source))
            reads.append((key, read))
        self._done.put(reads)

    def _apply(self, entry: Entry, read: Read) -> bool:
        """Take a read into ``entry``; True when its summary changed."""
        name = entry.spec.name if entry.spec is not None else entry.found.folder
        where = entry.found.source.describe("")
        entry.refused = isinstance(read, Refused)
        if read.error is not None:
            if read.error != entry.error:
                log.warning("run %s: can not read %s (%s)", name, where, read.error)
            entry.error = read.error
            if read.version is not None:
                entry.version = read.version
            self._backoff(entry, changed=False)  # a denied prefix is not asked at every pass
            if entry.summary is None:  # listed, but unreadable: shown as such
                self._set(entry, RunSummary(name, state="unreadable", error=read.error))
                return True
            return False
        if entry.error is not None:
            log.info("run %s: %s readable again", name, where)
            entry.error = None
        meta = read.meta if read.meta is not None else entry.meta
        if read.meta is not None:  # held only where a read of status would not give it again
            stored = name_in(read.meta)  # its folder's string where equal: one, not two
            entry.stored = entry.found.folder if stored == entry.found.folder else stored
            entry.meta = None if meta_in(read.status) is not None else read.meta
        if read.version is not None:  # S3's comes from the prefix's listing
            entry.version = read.version
        summary = read.summary or from_documents(name, meta, read.status)
        summary.name = name  # read under no name, on a pool thread
        if summary == entry.summary:
            self._backoff(entry, changed=False)
            return False
        self._backoff(entry, changed=True)
        self._set(entry, summary)
        return True

    def _set(self, entry: Entry, summary: RunSummary) -> None:
        entry.summary = summary
        if summary.ended:
            self._live.discard(entry.found.key)
        else:
            self._live.add(entry.found.key)

    def _backoff(self, entry: Entry, changed: bool) -> None:
        limit = self.max_interval if entry.found.remote else self.poll_interval
        entry.delay = self.poll_interval if changed else min(limit, max(entry.delay, 0.5) * 2)

    def _due(self, entry: Entry, now: float) -> bool:
        summary = entry.summary
        assert summary is not None
        if not entry.found.remote:
            # A file event, or its time: read again if its status changed (an event may be
            # only a read's access time, and what the table shows is all in status).
            wait = ENDED_RECHECK_S if summary.ended else self.poll_interval
            if not entry.dirty and now - entry.checked < wait:
                return False
            entry.checked, entry.dirty = now, False
            return status_version(entry.found.source) != entry.version
        if summary.ended:
            return False  # the prefix's listing tells when it changes
        return now - entry.checked >= entry.delay

    def _s3_changes(self, following: set[str]) -> None:
        assert isinstance(self.runs, S3Runs)
        try:
            versions = self.runs.status_page()  # None until its minute has passed
        except S3ReadError as err:
            log.warning("listing %s for changed runs: %s", self.runs, err)
            return
        if versions is None:
            return
        for key, version in versions.items():
            entry = self.entries.get(key)
            if entry is None or entry.reading:  # a read under way may have seen either version
                continue
            if entry.summary is not None and entry.version not in (None, version):
                if key in following:
                    entry.dirty = True  # its feed reads it (see changed())
                else:
                    self._submit(key)
            entry.version = version

    def changed(self, key: str) -> bool:
        """Whether the prefix's listing saw a followed run's status change since last asked."""
        entry = self.entries[key]
        dirty, entry.dirty = entry.dirty, False
        return dirty
