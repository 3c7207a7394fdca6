"""The recorder's writer thread: drain the queues, encode, append, tell ``on_file`` of written files.

It follows TensorBoard's ``EventFileWriter``: one thread behind a queue and a stop
flag. Each round takes what the training thread queued, encodes it (scalar columns,
PNGs, the extra kinds), hands the frames to the :class:`~.frame_sink.FrameSink`
(which keeps them through a full disk), folds them into the run summary
(:mod:`.summary`), and rewrites status when it is due. A
failure ends the thread and goes to ``on_fail``, which the recorder raises on the
caller's next call.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapshot_store.format import frames as fmt
from snapshot_store.format.batches import ImageRecord, encode_image_batch, encode_scalar_batch
from snapshot_store.format.images import encode_png
from snapshot_store.format.kinds import encode_extra_batch
from snapshot_store.write.documents import RunDocuments
from snapshot_store.write.encoders import PendingExtra, encode_pending
from snapshot_store.write.frame_sink import FrameSink, OnFile
from snapshot_store.write.scalar_columns import (
    RECORD_ITEMS,
    ScalarColumns,
    ScalarQueue,
    last_wall_time,
)

if TYPE_CHECKING:  # imported only when a run judges alert rules (its http imports)
    from snapshot_store.alerting.on_writer import AlertSettings, WriterAlerts

log = logging.getLogger(__name__)

# (group, name, step, epoch, wall_time, HWC uint8 pixels or PNG bytes).
PendingImage = tuple[str, str, int, float, float, Any, list[str]]  # captions last

# Memory a queued scalar holds (RECORD_ITEMS list slots, its wall time and value):
# the queue's share of max_pending_bytes is counted in records, not measured.
_RECORD_BYTES = 144


@dataclass
class Queues:
    """What the training thread hands the writer thread (each put and take atomic
    under the GIL: no lock)."""

    scalars: ScalarQueue = field(default_factory=ScalarQueue)
    images: collections.deque[PendingImage] = field(default_factory=collections.deque)
    extras: collections.deque[PendingExtra] = field(default_factory=collections.deque)
    # Flushes waiting for the next round; each is released once it is written.
    flush_waiters: collections.deque[threading.Event] = field(default_factory=collections.deque)


class WriterThread:
    """Writes what :class:`Queues` holds to the store, every ``flush_interval`` or when woken.

    Args:
        epoch: the epoch last given to the recorder (read for images, extras and status).
        on_queue_limit: told the queue items allowed after each round: fewer while
            frames wait for a full disk, so the queue and the waiting frames together
            stay under ``max_pending_bytes``.
        on_fail: called with the exception that ended the thread.
        alerts: the run's alert rules, judged here on each round's points, at each status
            write and at the end (never on the training thread).
    """

    def __init__(
        self,
        queues: Queues,
        columns: ScalarColumns,
        documents: RunDocuments,
        *,
        on_file: OnFile | None,
        flush_interval: float,
        segment_bytes: int,
        segment_seconds: float,
        max_pending_bytes: int,
        epoch: Callable[[], float],
        on_queue_limit: Callable[[int], None],
        on_fail: Callable[[BaseException], None],
        alerts: AlertSettings | None = None,
    ) -> None:
        self.queues = queues
        self.alerts: WriterAlerts | None = None
        if alerts is not None:
            from snapshot_store.alerting.on_writer import WriterAlerts

            self.alerts = WriterAlerts.of_run(alerts, documents)
        self.flush_interval = flush_interval
        self.max_pending_bytes = max_pending_bytes
        self._columns = columns
        self._documents = documents
        self._on_file = on_file
        self._epoch = epoch
        self._on_queue_limit = on_queue_limit
        self._on_fail = on_fail
        self._sink = FrameSink(
            documents.store_dir, segment_bytes, segment_seconds, self.on_file, max_pending_bytes
        )
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="snapshot-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """Write now instead of at the next interval."""
        self._wake.set()

    def stop(self) -> None:
        """Write what is queued, close the segments and wait for the thread to end."""
        self._stop = True
        self._wake.set()
        self._thread.join()

    def queue_limit(self, waiting_bytes: int) -> int:
        """Queue items allowed while ``waiting_bytes`` of frames wait for the disk."""
        return max(0, self.max_pending_bytes - waiting_bytes) // _RECORD_BYTES * RECORD_ITEMS

    def pending_bytes(self) -> int:
        """Memory the queued scalars and the frames waiting for the disk hold together."""
        return len(self.queues.scalars) // RECORD_ITEMS * _RECORD_BYTES + self._sink.waiting_bytes

    def on_file(self, path: Path, closed: bool) -> None:
        """Tell ``on_file`` that ``path`` was written (``closed``: it will not change again)."""
        if self._on_file is not None:
            self._on_file(path, closed)

    def close_after_failure(self) -> None:
        """Close the segments and write status 'failed' as far as the failure allows."""
        self._documents.end("failed")
        self._sink.close_after_failure()
        try:
            self._write_status(time.time())
        except Exception as err:
            log.warning("could not mark %s failed: %s", self._documents.store_dir, err)

    # --- the thread ------------------------------------------------------------------

    def _run(self) -> None:
        waiters = self.queues.flush_waiters
        try:
            self.on_file(self._documents.meta_path, closed=True)
            while True:
                self._wake.wait(self.flush_interval)
                self._wake.clear()
                stopping = self._stop
                # Flushes asked for before this write; released once it is done (or by
                # on_fail, after the error is set, so no flush returns without seeing it).
                waiting = len(waiters)
                self._write_pending(final=stopping)
                for _ in range(waiting):
                    waiters.popleft().set()
                if stopping:
                    return
        except BaseException as err:  # any failure ends the thread; the caller raises it
            self._on_fail(err)

    def _write_pending(self, final: bool) -> None:
        """One round: frame what is queued, append it, then status and segments as due."""
        failures = self._frame_scalars()
        self._frame_images_and_extras()
        wrote = self._sink.write()
        self._on_queue_limit(self.queue_limit(self._sink.waiting_bytes))
        if wrote:
            self._documents.changed()
        if failures:  # after this batch's other values are written
            raise failures[0]
        now = time.time()
        if self._documents.status_due(now, final):
            self._write_status(now)
            self._judge_status(now)
        if final:
            self._sink.close()
        else:
            self._sink.report_open_segments(wrote)

    def _frame_scalars(self) -> list[Exception]:
        """Frame the queued scalars for the sink; the failed device copies among them."""
        queued = self.queues.scalars.take()
        if not queued:
            return []
        columns, last, failures = self._columns.convert(queued)
        if columns:
            self._sink.add(fmt.SCALARS, encode_scalar_batch(columns))
            self._documents.summary.add(columns)
            if self.alerts is not None:
                self.alerts.points(columns)
        self._documents.saw_scalars(last, last_wall_time(queued))
        return failures

    def _frame_images_and_extras(self) -> None:
        """Encode the queued images (PNG) and extra records, and frame them for the sink."""
        pending_images, pending_extras = self.queues.images, self.queues.extras
        images = _encode_images([pending_images.popleft() for _ in range(len(pending_images))])
        extras, extra_images = encode_pending(
            [pending_extras.popleft() for _ in range(len(pending_extras))], self._epoch()
        )
        images += extra_images
        if images:
            self._sink.add(fmt.IMAGES, encode_image_batch(images))
        if extras:
            self._sink.add(fmt.EXTRAS, encode_extra_batch(extras))
            self._documents.summary.saw_records(extras)

    def rewrite_status(self) -> None:
        """Write status once more after the thread ended (alerts delivered while closing)."""
        self._write_status(time.time())

    def finish(self, failed: bool) -> None:
        """After :meth:`stop`: a ``failed`` run's segments closed and its status marked as far
        as the failure allows; the alerts still queued delivered, and recorded in status."""
        if failed:
            self.close_after_failure()
        if self.alerts is not None:
            self.alerts.finish(self._documents, failed, self)

    def _judge_status(self, now: float) -> None:
        """The alert rules' look at the status just written; the run's end, at its last."""
        docs, alerts = self._documents, self.alerts
        if alerts is None:
            return
        if docs.state != "running":
            alerts.ended(docs.state, docs.step, docs.session_started)
            return
        status = {
            "state": docs.state,
            "step": docs.step,
            "updated": now,
            "last_log_time": docs.last_log_time,
            "heartbeat_seconds": docs.heartbeat_seconds,
        }
        alerts.status(status, now)

    def _write_status(self, now: float) -> None:
        """Write status (with what is lost, once the run ended); a full disk is reported."""
        ended = self._documents.state != "running"
        unwritten = self._sink.unwritten() if ended else None  # closing: what is lost, counted
        try:
            self._documents.write_status(now, self._epoch(), unwritten)
        except OSError as err:
            self._sink.report_write_error("status", err)
            return
        self.on_file(self._documents.status_path, closed=ended)


def _encode_images(records: list[PendingImage]) -> list[ImageRecord]:
    out = []
    for group, name, step, epoch, wall_time, pixels, captions in records:
        png = pixels if isinstance(pixels, bytes) else encode_png(pixels)
        record = (group, name, int(step), float(epoch), wall_time, png)
        out.append((*record, captions) if captions else record)
    return out
