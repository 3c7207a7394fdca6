"""Append-only segment files, rolled by size and age so closed segments never change."""

from __future__ import annotations

import io
import logging
import os
import time
from pathlib import Path

from snapshot_store.format.frames import parse_segment_name, segment_name

log = logging.getLogger(__name__)


def _segment_indexes(store_dir: Path, stream: str) -> list[int]:
    """Indexes of the segments of ``stream`` already in ``store_dir``."""
    names = (path.name for path in store_dir.iterdir()) if store_dir.is_dir() else ()
    return [
        parsed[1]
        for parsed in map(parse_segment_name, names)
        if parsed is not None and parsed[0] == stream
    ]


class SegmentWriter:
    """Appends frames to ``<stream>-NNNNNNNN.pickle`` files in one directory.

    A resumed run starts a new segment after the highest existing one: files
    written by an earlier session are never reopened.
    """

    def __init__(self, store_dir: Path, stream: str, max_bytes: int, max_age: float) -> None:
        self.store_dir = store_dir
        self.stream = stream
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._next_index = max(_segment_indexes(store_dir, stream), default=-1) + 1
        self._file: io.FileIO | None = None
        self._path: Path | None = None
        self._size = 0
        self._opened_at = 0.0

    @property
    def active_path(self) -> Path | None:
        """The segment being appended to, if one is open."""
        return self._path

    def append(self, frame: bytes) -> Path | None:
        """Append one frame; returns the path of a segment this call closed, if any.

        On an OSError (a full disk) the segment is cut back to its last complete
        frame, so readers never see a torn frame followed by good ones, and the
        error is raised for the caller to retry the same frame later.
        """
        closed = None
        if self._file is not None and (
            self._size >= self.max_bytes or time.monotonic() - self._opened_at >= self.max_age
        ):
            closed = self.close()
        file = self._file if self._file is not None else self._open()
        try:
            view = memoryview(frame)
            while view:  # an unbuffered write may be partial
                view = view[file.write(view) or 0 :]
        except OSError:
            self._truncate_to(file, self._size)
            raise
        self._size += len(frame)
        return closed

    def close(self) -> Path | None:
        """Flush, fsync and close the active segment; returns its path."""
        if self._file is None:
            return None
        path = self._path
        try:
            os.fsync(self._file.fileno())
        finally:
            self._file.close()
            self._file, self._path, self._size = None, None, 0
        return path

    def _open(self) -> io.FileIO:
        while True:
            path = self.store_dir / segment_name(self.stream, self._next_index)
            self._next_index += 1
            try:
                # 'xb': never clobber a segment, even one left by another writer.
                file = open(path, "xb", buffering=0)  # noqa: SIM115 - closed by close()
                break
            except FileExistsError:
                # Another writer took this index since we looked: the next free
                # one keeps this writer's frames, in a file of its own.
                log.warning("%s was created by another writer; using the next index", path.name)
        self._file, self._path = file, path
        self._size = 0
        self._opened_at = time.monotonic()
        return file

    def _truncate_to(self, file: io.FileIO, size: int) -> None:
        try:
            file.truncate(size)
            file.seek(size)
        except OSError as err:  # still nothing we can do but report it
            log.error("could not cut %s back to its last good frame: %s", self._path, err)
