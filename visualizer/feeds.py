"""A followed run (a feed): its store read whole as it grows, with back-off while quiet.

Which runs are followed is :mod:`visualizer.runset`'s; the follow loop
(:mod:`visualizer.follower`) polls each feed when due.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Literal

from snapshot_store.format.frames import ENDED_STATES
from snapshot_store.format.summary import RunSummary
from snapshot_store.read.store_reader import PAGE_BYTES, StoreReader
from visualizer.model.rundata import RunData
from visualizer.model.summary import from_documents, from_run
from visualizer.sources.runs import RunSpec
from visualizer.sources.s3 import S3ReadError

log = logging.getLogger(__name__)

# Bytes a point costs in memory (Series: step, value, wall time) with its share of overhead.
POINT_BYTES = 20
# Where an open page shows a run: its curves, its row in the runs table alone, or nowhere.
Shown = Literal["curves", "row"] | None
# The least time between two reads of a running S3 run of a sweep, by where it is shown (10
# runs training, read every second, were 2,160 requests a minute). A read is its listing,
# status and new bytes (4-5 requests): every 10 s is what a row shows (the table is redrawn
# every few seconds); every 5 minutes is under one a minute, and alert rules see its curves.
READ_GAPS: dict[Shown, float] = {"curves": 0.0, "row": 10.0, None: 300.0}


def check_poll_interval(poll_interval: float) -> None:
    """ValueError unless ``poll_interval`` (seconds) is a finite number above 0."""
    if not (math.isfinite(poll_interval) and poll_interval > 0):  # NaN would spin the loop
        raise ValueError(
            f"poll_interval (--poll-interval) must be a finite number above 0, not {poll_interval}"
        )


class PollSchedule:
    """When to poll a source next: soon after a change, ever later while nothing changes."""

    def __init__(self, interval: float, max_interval: float | None = None) -> None:
        self.interval = interval
        self.max_interval = max(interval, max_interval if max_interval is not None else interval)
        self.delay = interval
        self.due = 0.0
        self.polled = -math.inf

    def record(self, changed: bool, now: float) -> None:
        """Set the next due time after a poll that found (or did not find) news."""
        self.delay = self.interval if changed else min(self.delay * 2, self.max_interval)
        self.due, self.polled = now + self.delay, now

    def due_for(self, shown: Shown) -> float:
        """When to poll next: when due, and not before its :data:`READ_GAPS` after the last poll
        however often it changes (so at once when a page opens on it)."""
        return max(self.due, self.polled + READ_GAPS[shown])


@dataclass
class Feed:
    """One followed run: reader, data, the visdom env it is drawn in, schedule."""

    spec: RunSpec
    key: str  # its store's key in the catalog
    reader: StoreReader
    data: RunData
    env: str
    schedule: PollSchedule
    replayed: bool = False
    failing: str | None = field(default=None)
    opened: float = 0.0  # when the page last asked for it (monotonic); 0: never

    @property
    def memory(self) -> int:
        """Bytes its data holds, about: points and images."""
        images = sum(len(shot.png) for shots in self.data.image_history.values() for shot in shots)
        return self.data.points * POINT_BYTES + images

    @property
    def ended(self) -> bool:
        """Whether its status says it ended (finished, failed or stopped)."""
        status = self.data.status
        return isinstance(status, dict) and status.get("state") in ENDED_STATES

    def summary(self) -> RunSummary:
        """Its summary: the status document's, else computed from the series read."""
        data = self.data
        if isinstance(data.status, dict) and "series" in data.status:
            return from_documents(data.name, data.meta, data.status)
        return from_run(data)

    def poll(self, now: float) -> bool:
        """Read what is new; True when anything was. A failure is logged once until it
        changes, and retried later; an S3 one is raised instead (the caller tells of it
        with :meth:`failed`, or not)."""
        started = time.perf_counter()
        changed = False
        try:
            while True:  # a long history arrives a page at a time; drain it before drawing
                changed |= self.data.apply(self.reader.poll(max_bytes=PAGE_BYTES))
                if not self.reader.more:
                    break
        except S3ReadError:
            self.schedule.record(False, now)
            raise
        except Exception as err:  # permissions, a broken disk: keep the other runs going
            self.failed(err, now)
            return False
        where = self.spec.source.describe("")
        if self.failing:
            log.info("run %r: %s readable again", self.spec.name, where)
            self.failing = None
        self.schedule.record(changed, now)
        if changed and not self.replayed:
            self.replayed = True
            log.info(
                "run %r: read %d points of %d series in %.2f s",
                self.spec.name,
                self.data.points,
                len(self.data.series),
                time.perf_counter() - started,
            )
        return changed

    def failed(self, err: Exception, now: float) -> None:
        """Tell of a failed read, once until it changes; retried at the next due time."""
        message = str(err) if isinstance(err, S3ReadError) else f"{type(err).__name__}: {err}"
        if message != self.failing:
            where = self.spec.source.describe("")
            log.warning("run %r: can not read %s (%s); retrying", self.spec.name, where, message)
            self.failing = message
        self.schedule.record(False, now)
