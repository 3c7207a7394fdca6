"""Follow a snapshot store: read only new bytes, stop at torn frames, refuse hostile files.

The reader works over a :class:`Source` (a local directory here; S3 in the
visualizer), so the same code replays history and follows a live run anywhere.
Files are read a page at a time (:data:`READ_BYTES`, or one frame when a frame
is longer), so memory stays bounded whatever the size of a file.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from snapshot_store.format import frames as fmt
from snapshot_store.format.batches import ImageRecord, SeriesColumns, image_records, scalar_records
from snapshot_store.format.kinds import ExtraRecord, extra_records
from snapshot_store.read.history import History
from snapshot_store.read.local_source import LocalSource

log = logging.getLogger(__name__)

# Bytes asked of a source at once: large enough that a page costs one request
# (one ranged GET on S3) among many frames, small enough to keep memory flat.
READ_BYTES = 4 << 20
# A long history is replayed this many bytes of segments a poll (``poll(max_bytes=)``):
# each page becomes compact arrays before the next is read, so memory stays flat.
PAGE_BYTES = 2 << 20
# A meta or status document is one frame.
MAX_DOCUMENT_BYTES = fmt.MAX_FRAME_BYTES + fmt.FRAME_OVERHEAD


class Source(Protocol):
    """Where store files come from."""

    def describe(self, name: str) -> str:
        """Human-readable location of file ``name`` for messages."""

    def list(self) -> dict[str, tuple]:
        """File name -> version token whose first item is the size in bytes."""

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        """At most ``length`` bytes of file ``name`` from ``offset`` (None: to its current end).

        Fewer bytes than asked means the file ends there.
        """


@dataclass
class Update:
    """What one :meth:`StoreReader.poll` found that is new."""

    scalars: list[SeriesColumns] = field(default_factory=list)
    images: list[ImageRecord] = field(default_factory=list)
    extras: list[ExtraRecord] = field(default_factory=list)  # text, histograms, ...
    meta: dict[str, Any] | None = None
    status: dict[str, Any] | None = None

    def __bool__(self) -> bool:
        return bool(
            self.scalars
            or self.images
            or self.extras
            or self.meta is not None
            or self.status is not None
        )

    @property
    def points(self) -> int:
        """Number of scalar points in this update."""
        return sum(len(s[2]) for s in self.scalars)


@dataclass
class _SegmentState:
    offset: int = 0  # bytes consumed as complete, valid frames (or skipped oversize ones)
    size_seen: int = 0  # file size when last read to its end: unchanged means nothing to do
    closed_seen: bool = False
    done: bool = False  # corrupt or hostile: skipped for good
    warned_torn: bool = False
    unreadable: bool = False  # the last read failed (permission, I/O): read again next poll


class StoreReader:
    """Incremental reader of one store. Call :meth:`poll` repeatedly.

    Each file is read from where the last poll stopped. A frame cut short (the
    writer is mid-append) is left for the next poll. A complete frame that fails
    its checksum, or a payload that does not unpickle or asks for any global, is
    reported once with the file's name and the rest of that file is skipped. A
    frame that unpickles but holds records breaking the schema loses only those
    records, each reported with the file, its frame's byte offset and the reason.
    """

    def __init__(self, source: Source | str | os.PathLike[str]) -> None:
        self.source: Source = (
            LocalSource(source, warn=self._warn)
            if isinstance(source, (str, os.PathLike))
            else source
        )
        self._segments: dict[str, _SegmentState] = {}
        self._documents: dict[str, tuple] = {}
        self._unreadable_documents: set[str] = set()
        self.warnings: list[str] = []
        self._newer_warned = False
        self.more = False  # the last poll stopped at max_bytes: poll again at once
        self._listing: dict[str, tuple] | None = None
        self._carried: Update | None = None  # read by a poll that raised: not handed out yet

    def poll(self, max_bytes: int | None = None) -> Update:
        """Read whatever is new since the last call.

        With ``max_bytes``, stop after about that many bytes of segments (at
        least one page) and set :attr:`more`, so a long history can be replayed
        a page at a time instead of sitting in memory whole.
        """
        update, self._carried = self._carried or Update(), None
        try:
            self._poll_into(update, max_bytes)
        except Exception:
            # A read that raised (an S3 error) ends the poll, but the reads before it
            # moved their offsets on: what they found comes with the next poll.
            self._carried = update
            raise
        return update

    def _poll_into(self, update: Update, max_bytes: int | None) -> None:
        # Going on with a history read a page at a time: the listing it started from
        # still holds (one LIST per page would be most of an S3 replay's requests).
        if not (self.more and self._listing is not None):
            self._listing = self.source.list()
        listing = self._listing
        self.more = False
        budget = max_bytes
        meta = self._read_document(fmt.META_FILE, listing)
        if meta is not None:
            update.meta = meta
            self._check_version(meta.get("format_version"))
        status = self._read_document(fmt.STATUS_FILE, listing)
        update.status = status if status is not None else update.status
        segments = sorted(
            (parsed, name) for name in listing if (parsed := fmt.parse_segment_name(name))
        )
        last_index: dict[str, int] = {}
        for (stream, index), _ in segments:
            last_index[stream] = max(index, last_index.get(stream, -1))
        for (stream, index), name in segments:
            state = self._segments.setdefault(name, _SegmentState())
            closed = index < last_index[stream]
            size = listing[name][0]
            if state.done or (size == state.size_seen and closed == state.closed_seen):
                continue
            if budget is not None and budget <= 0:
                self.more = True
                break
            read, finished = self._read_segment(name, stream, state, closed, size, update, budget)
            if budget is not None:
                budget -= read
            if not finished:  # stopped at the budget, mid-file
                self.more = True
                break
            if not state.unreadable:
                state.size_seen, state.closed_seen = size, closed

    def _check_version(self, version: object) -> None:
        """Say once that a newer writer made the store: what this reader skips is not lost."""
        if type(version) is int and version > fmt.FORMAT_VERSION and not self._newer_warned:
            self._newer_warned = True
            self._warn(
                f"{self.source.describe(fmt.META_FILE)}: written in store format {version}, "
                f"newer than this reader's {fmt.FORMAT_VERSION}; records it cannot read are "
                "skipped: upgrade remote-train-monitor where you read the run"
            )

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.warnings.append(message)

    def _read_document(self, name: str, listing: dict[str, tuple]) -> dict[str, Any] | None:
        version = listing.get(name)
        if version is None or self._documents.get(name) == version:
            return None
        where = self.source.describe(name)
        if version[0] > MAX_DOCUMENT_BYTES:
            self._documents[name] = version
            self._warn(f"skipped {where}: {version[0]:,} bytes, larger than any document")
            return None
        try:
            data = self.source.read(name, 0, MAX_DOCUMENT_BYTES)
        except FileNotFoundError:
            return None
        except OSError as err:  # read again at the next poll; said once while it lasts
            if name not in self._unreadable_documents:
                self._unreadable_documents.add(name)
                self._warn(f"skipped {where} for now: can not read it ({err}); trying again")
            return None
        # Only a document read is taken as seen: one whose read raised (an S3 error
        # ends the poll) is read again at the next, though it did not change.
        self._documents[name] = version
        if name in self._unreadable_documents:  # said again should it fail again
            self._unreadable_documents.discard(name)
            log.info("%s is readable again", where)
        try:
            return fmt.decode_document(data, where)
        except fmt.StoreError as err:
            self._warn(f"skipped {err}")
            return None

    def _read_segment(
        self,
        name: str,
        stream: str,
        state: _SegmentState,
        closed: bool,
        size: int,
        update: Update,
        budget: int | None,
    ) -> tuple[int, bool]:
        """Add the new frames of one segment to ``update``, a page at a time.

        Returns the bytes read and whether the segment was read to its end
        (False: stopped at ``budget``).
        """
        where = self.source.describe(name)
        total, want, tail, start = 0, READ_BYTES, 0, state.offset
        while True:
            try:
                data = self.source.read(name, state.offset, want)
            except FileNotFoundError:
                return total, True
            except OSError as err:  # permission, a failing disk: maybe for a while only
                if not state.unreadable:
                    self._warn(f"skipped {where} for now: can not read it ({err}); trying again")
                state.unreadable = True
                return total, True
            if state.unreadable:
                state.unreadable = False
                log.info("%s is readable again", where)
            total += len(data)
            consumed, need = self._frames(data, where, stream, state, size, update)
            state.offset += consumed
            tail = len(data) - consumed
            if state.done or len(data) < want:  # the end of what is there now
                break
            # A frame longer than a page is read whole by the next request.
            want = max(READ_BYTES, need)
            # Only after progress: a poll that stopped before reading a frame
            # longer than a page would start over at the same place forever.
            if budget is not None and total >= budget and state.offset > start:
                return total, False
        if closed and not state.done and tail and not state.warned_torn:
            # Normal for a moment on S3 (an older upload of a rolled segment);
            # kept and re-read if the file changes.
            state.warned_torn = True
            log.info("%s ends in an incomplete frame at byte %d", where, state.offset)
        return total, True

    def _frames(
        self, data: bytes, where: str, stream: str, state: _SegmentState, size: int, update: Update
    ) -> tuple[int, int]:
        """Decode the frames of one page into ``update``.

        Returns the bytes consumed and the size of the incomplete frame after
        them (0 when unknown).
        """
        consumed = 0
        try:
            for frame in fmt.iter_frames(data):
                if stream == fmt.SCALARS:
                    scalars, problems = scalar_records(frame.payload, where)
                    update.scalars.extend(scalars)
                elif stream == fmt.IMAGES:
                    images, problems = image_records(frame.payload, where)
                    update.images.extend(images)
                else:
                    extras, problems = extra_records(frame.payload, where)
                    update.extras.extend(extras)
                for problem in problems:
                    # A bad record costs only itself: its neighbours and later
                    # frames are kept, and the offset moves past its frame.
                    self._warn(
                        f"skipped a bad record in {where} (frame at byte "
                        f"{state.offset + consumed}): {problem}"
                    )
                consumed = frame.end
            return consumed, fmt.frame_size(data, consumed) or 0
        except fmt.OversizeFrameError as err:
            # Its length is checksummed, so the frames after it can still be trusted.
            at = state.offset + consumed
            if state.offset + err.end > size:
                self._warn(f"skipped the rest of {where}: {err} (offset {at})")
                state.done = True
                return consumed, 0
            self._warn(f"skipped a frame of {where}: {err} (offset {at})")
            return err.end, 0
        except fmt.StoreError as err:
            # A checksum that fails, or a payload that does not unpickle (or asks
            # for a global): the writer is not ours, so trust nothing after.
            self._warn(f"skipped the rest of {where}: {err} (offset {state.offset + consumed})")
            state.done = True
            return consumed, 0


def read_store(
    source: Source | str | os.PathLike[str], images: bool = True
) -> tuple[History, StoreReader, Update]:
    """Read a whole store once: its history, the reader (with warnings) and the last documents.

    The returned update holds the meta and status documents, and every image
    and extra record (text, histograms, ...) unless ``images`` is False (then memory holds only the scalars, whatever
    the size of the image segments).
    """
    reader = StoreReader(source)
    history = History()
    update = Update()
    while True:
        page = reader.poll(max_bytes=READ_BYTES)
        history.add(page.scalars)
        if images:
            update.images.extend(page.images)
            update.extras.extend(page.extras)
        update.meta = update.meta if page.meta is None else page.meta
        update.status = update.status if page.status is None else page.status
        if not reader.more:
            return history, reader, update
