"""Which runs are known, and which of them are followed (read whole and drawn).

Every run under the root is known by its summary (:mod:`visualizer.sources.catalog`)
and listed in the runs table. With up to ``compare`` runs, every run is followed.
With more, the followed runs are the compared ones (the ``compare`` most recent,
or the best by ``--sort-by`` or the comparison page's sort series; of a finished sweep
the best by the runs table's first series) and those
opened from the runs table. The runs opened from the page leave memory again,
least recently opened first, once the followed runs hold more than the memory
budget; they are read back from the store when opened again.
"""

from __future__ import annotations

import heapq
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from run_core.tags import key_of, tag_of
from snapshot_store.format.summary import RunSummary
from snapshot_store.read.store_reader import StoreReader
from visualizer.model.rundata import RunData
from visualizer.model.summary import best_is_highest, best_of
from visualizer.panes.compare import DEFAULT_COMPARE, Selection
from visualizer.panes.run_rows import RunsTableState, opening_view, series_choices
from visualizer.panes.screen import Screen
from visualizer.sources.catalog import Catalog, Entry

from .feeds import Feed, PollSchedule
from .tree_memory import tree_rss

log = logging.getLogger(__name__)

DEFAULT_MEMORY_BUDGET_MB = 300.0
PROGRESS_LOG_INTERVAL = 5.0  # while many runs are read, a line this often
READING_TABLE_S = 1.0  # while runs are read, the table's rows are listed again this often
OPENED_GRACE_S = 5.0  # a run just opened from the page stays, whatever the budget
VISDOM_CHECK_S = 1.0  # how often the visdom server's memory is measured for the budget


def compared(summaries: Sequence[RunSummary], selection: Selection, count: int) -> list[RunSummary]:
    """The ``count`` runs to overlay: the best by ``selection.sort_by`` (runs that logged it
    first; "best" as :func:`~visualizer.model.summary.best_of` says, the value the comparison's
    table shows); without it, while a run is running the most recently updated, else (a
    finished sweep) the best by the series the runs table shows first, the most logged."""
    key = selection.sort_by
    live = any(s.state == "running" for s in summaries)
    if key is None and not live:  # a finished sweep: the best by the runs table's series
        key = next((key_of(tag) for tag in series_choices(summaries)), None)
    # heapq.nsmallest is sorted()[:count], without sorting 100,000 runs for 20 of them.
    if key is None:
        return heapq.nsmallest(count, summaries, key=lambda s: (-(s.updated or 0.0), s.name))
    tag = tag_of(*key)
    higher = best_is_highest(tag, selection.descending)

    def rank(summary: RunSummary) -> tuple[bool, float, str]:
        stats = summary.series.get(tag)
        best = best_of(tag, stats.min, stats.max, selection.descending) if stats else None
        if best is None or math.isnan(best):
            return True, 0.0, summary.name
        return False, -best if higher else best, summary.name

    return heapq.nsmallest(count, summaries, key=rank)


def over_budget(
    feeds: Iterable[Feed], keep: set[str], budget: int, now: float, grace: float = OPENED_GRACE_S
) -> list[Feed]:
    """The feeds to let go so the rest hold at most ``budget`` bytes: never those in ``keep``
    (by name) or opened in the last ``grace`` seconds, the least recently opened first."""
    feeds = list(feeds)
    held = sum(feed.memory for feed in feeds)
    out: list[Feed] = []
    for feed in sorted(feeds, key=lambda f: f.opened):
        if held <= budget:
            break
        if feed.spec.name not in keep and feed.opened < now - grace:
            out.append(feed)
            held -= feed.memory
    return out


class RunSet:
    """The known runs (by name) and the followed ones, drawn on ``screen``."""

    def __init__(
        self,
        catalog: Catalog,
        screen: Screen,
        selection: Selection,
        *,
        env_of: Callable[[str], str],
        schedule: Callable[[bool], PollSchedule],
        compare: int = DEFAULT_COMPARE,
        memory_budget_mb: float = DEFAULT_MEMORY_BUDGET_MB,
    ) -> None:
        self.catalog = catalog
        self.screen = screen
        self.selection = selection  # --runs: the others are left out
        # The runs table opens sorted by --sort-by, as the runs compared are chosen.
        screen.index.view = opening_view(selection.sort_by, selection.descending)
        self.env_of = env_of
        self.schedule = schedule  # a new feed's poll schedule, by whether it is remote
        self.compare = compare
        self.memory_budget = int(memory_budget_mb * (1 << 20))
        # The visdom server this viewer started (its process tree's memory counts in the
        # budget), and that memory as last measured, when.
        self.visdom_pid: int | None = None
        self._visdom_rss, self._visdom_at = 0, -math.inf
        self.known: dict[str, Entry] = {}  # every named run --runs selects
        self.unmatched: set[str] = set()  # runs found that --runs leaves out
        self.feeds: dict[str, Feed] = {}  # the followed runs
        self._wanted: queue.SimpleQueue[tuple[str, threading.Event]] = queue.SimpleQueue()
        self._drawing: dict[str, list[threading.Event]] = {}  # opened from the page, not drawn
        self._chosen: tuple[int, Selection] | None = None  # what the compared runs are of
        self._table: RunsTableState | None = None  # the runs table's rows, as last listed
        self._table_at = -math.inf
        self._reading = False
        self._read_started = self._progress_at = time.monotonic()
        # Curve alert rules judge every running run from its points: among many, those are
        # followed too (their pages not drawn till opened), and let go once they ended.
        self.follow_running = False
        self._running: tuple[int, list[str]] = (-1, [])  # (catalog version, running runs)

    @property
    def many(self) -> bool:
        """More runs than are compared at once: only some are followed."""
        return self.catalog.total - len(self.unmatched) > self.compare

    def scanned(self, new: int) -> None:
        """``new`` stores were just found: their reading starts (and its progress is told)."""
        if new and not self._reading:
            self._reading, self._read_started = True, time.monotonic()

    def take(self, entries: Iterable[Entry]) -> None:
        """Take newly read runs, and follow the runs to follow."""
        for entry in entries:
            assert entry.spec is not None
            name = entry.spec.name
            if name in self.known or name in self.unmatched:
                continue
            if not self.selection.matches(name):
                self.unmatched.add(name)
                continue
            self.known[name] = entry
        self._log_progress()
        for name in self._to_follow():
            if name not in self.feeds:
                self.open(self.known[name])

    def _to_follow(self) -> list[str]:
        """The runs to follow: every run while there are few, else the compared ones (the
        comparison page's count of those its regex matches, best or most recent first, and the
        baseline) and, for the curve alert rules, the running ones."""
        self.screen.many = self.many
        if self.many and not self.catalog.complete:
            self.screen.compared = []  # chosen once every summary is in: none opened, then let go
            return []
        compare = self.screen.compare
        selection = compare.selection if compare is not None else self.selection
        if self._chosen != (self.catalog.version, selection) or self.screen.compared is None:
            self._chosen = (self.catalog.version, selection)
            summaries = [
                e.summary
                for e in self.known.values()
                if e.summary is not None and selection.matches(e.summary.name) and not e.refused
            ]
            names = [s.name for s in compared(summaries, selection, selection.count)]
            baseline = self.screen.baseline  # drawn in every window: followed, whatever the order
            extra = [baseline] if baseline in self.known and baseline not in names else []
            self.screen.compared = names + extra
        if not self.many:  # a store over the reader's budget is its row alone
            return [name for name, entry in self.known.items() if not entry.refused]
        return self.screen.compared + [n for n in self.running() if n not in self.screen.compared]

    def running(self) -> list[str]:
        """The known runs still running, when :attr:`follow_running` (listed again only when
        a summary changed: an idle pass over 10,000 runs costs nothing)."""
        if not self.follow_running:
            return []
        if self._running[0] != self.catalog.version:
            names = [n for n, e in self.known.items() if e.summary and e.summary.state == "running"]
            self._running = (self.catalog.version, names)
        return self._running[1]

    def _log_progress(self) -> None:
        """One line every few seconds while many runs are read, and one when all are."""
        now = time.monotonic()
        if not self._reading:
            return
        if not self.catalog.complete:
            if self.many and now - self._progress_at >= PROGRESS_LOG_INTERVAL:
                self._progress_at = now
                log.info("reading %d of %d runs", self.catalog.named, self.catalog.total)
            return
        self._reading = False
        if self.many:
            log.info("read %d runs in %.1f s", self.catalog.total, now - self._read_started)
        baseline = self.screen.baseline
        if baseline is not None and baseline not in self.known:
            log.warning(
                "--baseline %r: no such run at %s; give a run's name as the runs table lists it",
                baseline,
                self.catalog.runs,
            )
        if self.unmatched and not self.known:  # a typo in --runs should not wait silently
            message = self.selection.none_match(self.catalog.runs, self.unmatched)
            log.warning("%s; following, waiting for a run that matches", message)

    def open(self, entry: Entry) -> Feed:
        """Follow ``entry``'s run: read it whole and draw it in its env."""
        spec = entry.spec
        assert spec is not None
        env = self.env_of(spec.name)
        data, reader = RunData(spec.name), StoreReader(spec.source)
        feed = Feed(spec, entry.found.key, reader, data, env, self.schedule(spec.remote))
        feed.failing = entry.error  # told when its summary was read: not told again
        self.feeds[spec.name] = feed
        self.screen.add_run(spec.name, env, spec.source.describe(""))
        where = spec.source.describe("")
        level = logging.DEBUG if self.many else logging.INFO
        log.log(level, "following run %r from %s in visdom env %r", spec.name, where, env)
        return feed

    def table_state(self, now: float) -> RunsTableState:
        """Every known run's summary for the runs table: listed again when they changed, and
        while thousands are being read at most every :data:`READING_TABLE_S`."""
        table, unmatched = self._table, len(self.unmatched)
        read, total = self.catalog.named - unmatched, self.catalog.total - unmatched
        reading = not self.catalog.complete and now - self._table_at < READING_TABLE_S
        if table is None or (table.version != self.catalog.version and not reading):
            summaries = [e.summary for e in self.known.values() if e.summary is not None]
            compared = frozenset(self.screen.compared or ()) if self.many else frozenset()
            table = RunsTableState(summaries, read, total, self.catalog.version, compared)
            self._table, self._table_at = table, now
        return replace(table, read=read, total=total)

    # --- runs opened from the page ----------------------------------------------------------

    def want(self, name: str) -> threading.Event | None:
        """Follow run ``name`` (the page opened it; from any thread): an event set once its
        env is drawn, or None when no such run is known."""
        if name not in self.known:
            return None
        drawn = threading.Event()
        self._wanted.put((name, drawn))
        return drawn

    def open_wanted(self) -> None:
        """Follow the runs the page opened; let the least recently opened go past the budget."""
        now = time.monotonic()
        while True:
            try:
                name, drawn = self._wanted.get_nowait()
            except queue.Empty:
                break
            feed = self.feeds.get(name) or self.open(self.known[name])
            feed.opened = now
            self.screen.show(name)
            self._drawing.setdefault(name, []).append(drawn)
        keep = set(self.screen.compared if self.screen.compared is not None else self.feeds)
        keep.update(self.running())
        if set(self.feeds) <= keep:
            return  # nothing could leave: visdom is not measured
        budget = self.memory_budget - self._visdom_memory(now)
        grace = OPENED_GRACE_S
        if budget < sum(feed.memory for feed in self.feeds.values()) and self._visdom_rss:
            keep.update(self._drawing)  # visdom's share puts the tree past it: leave once drawn
            grace = 0.0
        for feed in over_budget(self.feeds.values(), keep, budget, now, grace):
            del self.feeds[feed.spec.name]
            self.screen.remove_run(feed.spec.name)
            log.debug("run %r leaves memory (--memory-budget)", feed.spec.name)

    def _visdom_memory(self, now: float) -> int:
        """Resident bytes of the visdom server this viewer started (0: none, or no ``/proc``),
        measured at most every VISDOM_CHECK_S."""
        if self.visdom_pid is not None and now - self._visdom_at >= VISDOM_CHECK_S:
            self._visdom_rss, self._visdom_at = tree_rss(self.visdom_pid) or 0, now
        return self._visdom_rss

    def drawn(self) -> None:
        """After a sync: tell the page's links whose runs are drawn now."""
        for name in [n for n in self._drawing if n in self.feeds and self.feeds[n].replayed]:
            for event in self._drawing.pop(name):
                event.set()
