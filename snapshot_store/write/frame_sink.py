"""Writer thread: framed batches on their way to the segments, held while the disk is full.

The recorder's writer thread hands each batch's frame bytes to a :class:`FrameSink`
(as TensorBoard's ``EventFileWriter`` hands records to its ``RecordWriter``). A
frame that can not be written (a full disk) waits in memory and is retried at the
next flush, in order; what waits is capped in bytes, so a disk that stays full
ends in one :class:`PendingLimitError` instead of an ever-growing heap.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from pathlib import Path

from snapshot_store.format import frames as fmt
from snapshot_store.write.segments import SegmentWriter
from snapshot_store.write.unwritten import unwritten_records

log = logging.getLogger(__name__)

# Seconds between two reports of the same full disk.
_ERROR_REPORT_SECONDS = 30.0

# Told of every file the store wrote: ``on_file(path, closed)`` (see the glossary).
OnFile = Callable[[Path, bool], None]


class PendingLimitError(RuntimeError):
    """Logged values waiting to be written reached the recorder's ``max_pending_bytes``."""

    def __init__(self, store_dir: Path, pending: int, limit: int) -> None:
        super().__init__(
            f"{pending / 2**20:.1f} MiB of logged values wait to be written to {store_dir}, "
            f"above max_pending_bytes={limit:,} (the disk is full or stalled); the values "
            "logged from now on are not recorded. Free disk space or move --checkpoints-dir, "
            "then restart from the last checkpoint"
        )


class FrameSink:
    """Per-stream segment writers and the frames waiting for them, at most ``max_bytes``."""

    def __init__(
        self,
        store_dir: Path,
        segment_bytes: int,
        segment_seconds: float,
        on_file: OnFile,
        max_bytes: int,
    ) -> None:
        self.store_dir = store_dir
        self.max_bytes = max_bytes
        self.waiting_bytes = 0  # frames not yet on disk, all streams
        self._on_file = on_file
        self._segments = {
            stream: SegmentWriter(store_dir, stream, segment_bytes, segment_seconds)
            for stream in fmt.STREAMS
        }
        self._waiting: dict[str, collections.deque[bytes]] = {
            stream: collections.deque() for stream in fmt.STREAMS
        }
        self._last_error_report = -float("inf")

    def unwritten(self) -> dict[str, int]:
        """Records per stream still waiting for the disk (counted at close, for the status)."""
        return unwritten_records(self._waiting)

    def add(self, stream: str, frame: bytes) -> None:
        """Queue ``frame`` (one or more framed batches) for ``stream``'s segment."""
        if frame:
            self._waiting[stream].append(frame)
            self.waiting_bytes += len(frame)

    def write(self) -> set[str]:
        """Append what waits, in order; the streams written to. A full disk keeps the rest.

        Raises :class:`PendingLimitError` when what still waits is above the cap.
        """
        wrote: set[str] = set()
        for stream, frames in self._waiting.items():
            while frames:
                try:
                    closed = self._segments[stream].append(frames[0])
                except OSError as err:  # a full disk: keep the frames, retry at the next flush
                    self.report_write_error(stream, err)
                    break
                self.waiting_bytes -= len(frames.popleft())
                wrote.add(stream)
                if closed is not None:
                    self._on_file(closed, True)
        if self.waiting_bytes > self.max_bytes:
            raise PendingLimitError(self.store_dir, self.waiting_bytes, self.max_bytes)
        return wrote

    def report_open_segments(self, streams: set[str]) -> None:
        """Tell ``on_file`` of the open segments of ``streams`` (appended to, still open)."""
        for stream in streams:
            active = self._segments[stream].active_path
            if active is not None:
                self._on_file(active, False)

    def close(self) -> None:
        """Close every segment (each told to ``on_file`` as closed); report what could not be written."""
        for stream, segment in self._segments.items():
            closed = segment.close()
            if closed is not None:
                self._on_file(closed, True)
            if self._waiting[stream]:
                log.error(
                    "%d batch(es) of %s could not be written to %s (disk full?)",
                    len(self._waiting[stream]),
                    stream,
                    self.store_dir,
                )

    def close_after_failure(self) -> None:
        """Close every segment as far as a failure allows, logging what can not be."""
        for stream, segment in self._segments.items():
            try:
                path = segment.close()
                if path is not None:
                    self._on_file(path, True)
            except Exception as err:
                log.warning("could not close the %s segment of %s: %s", stream, self.store_dir, err)

    def report_write_error(self, what: str, err: OSError) -> None:
        """Log a failed write of ``what``, once per :data:`_ERROR_REPORT_SECONDS`."""
        now = time.monotonic()
        if now - self._last_error_report >= _ERROR_REPORT_SECONDS:
            self._last_error_report = now
            log.error(
                "can not write %s to %s: %s. Logged values are kept in memory (up to "
                "max_pending_bytes) and written when space frees up; free disk space or "
                "move --checkpoints-dir.",
                what,
                self.store_dir,
                err.strerror or err,
            )
