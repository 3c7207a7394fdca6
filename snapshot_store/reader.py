"""Follow a snapshot store: read only new bytes, stop at torn frames, refuse hostile files.

The reader works over a :class:`Source` (a local directory here; S3 in the
visualizer), so the same code replays history and follows a live run anywhere.
"""

from __future__ import annotations

import itertools
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import frames as fmt

log = logging.getLogger(__name__)


class Source(Protocol):
    """Where store files come from."""

    def describe(self, name: str) -> str:
        """Human-readable location of file ``name`` for messages."""

    def list(self) -> dict[str, tuple]:
        """File name -> version token whose first item is the size in bytes."""

    def read(self, name: str, offset: int = 0) -> bytes:
        """Bytes of file ``name`` from ``offset`` to its current end."""


class LocalSource:
    """A store directory on a local or mounted filesystem.

    Only regular files, or symlinks to regular files inside the store, are
    listed or read: opening a FIFO or a device named like a store file could
    block the reader forever or touch hardware, and a symlink out of the store
    would read files the store does not own.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.root = Path(store_dir)
        self._warn = warn or (lambda message: log.warning("%s", message))
        self._refused: set[str] = set()  # names already warned about: one warning each

    def describe(self, name: str) -> str:
        return str(self.root / name)

    def _refuse(self, name: str, why: str) -> None:
        if name not in self._refused:
            self._refused.add(name)
            self._warn(f"skipped {self.describe(name)}: {why}")

    def _inside(self, path: Path) -> bool:
        """Whether ``path`` (resolved) lies in the store directory (resolved)."""
        return path.is_relative_to(self.root.resolve())

    def list(self) -> dict[str, tuple]:
        found = {}
        try:
            entries = list(os.scandir(self.root))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue  # temp files of atomic writes
            store_file = name in (fmt.META_FILE, fmt.STATUS_FILE) or fmt.parse_segment_name(name)
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    if not self._inside(Path(entry.path).resolve()):
                        if store_file:
                            self._refuse(name, "a symlink that leads outside the store")
                        continue
                    st = entry.stat()  # an inside link: the file it names
            except (OSError, RuntimeError):
                continue  # replaced between listing and stat, dangling, or a symlink loop
            if not stat.S_ISREG(st.st_mode):
                if store_file:
                    self._refuse(name, "not a regular file")
                continue
            found[name] = (st.st_size, st.st_mtime_ns)
        return found

    def read(self, name: str, offset: int = 0) -> bytes:
        path = (self.root / name).resolve()
        # Checked again here: the entry may have been swapped since list().
        if not self._inside(path):
            raise OSError(f"{self.describe(name)} leads outside the store")
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{self.describe(name)} is not a regular file")
            f.seek(offset)
            return f.read()


@dataclass
class Update:
    """What one :meth:`StoreReader.poll` found that is new."""

    scalars: list[fmt.SeriesColumns] = field(default_factory=list)
    images: list[fmt.ImageRecord] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    status: dict[str, Any] | None = None

    def __bool__(self) -> bool:
        return bool(self.scalars or self.images or self.meta is not None or self.status is not None)

    @property
    def points(self) -> int:
        """Number of scalar points in this update."""
        return sum(len(s[2]) for s in self.scalars)


@dataclass
class _SegmentState:
    offset: int = 0  # bytes consumed as complete, valid frames
    size_seen: int = 0  # file size at the last read: unchanged means nothing to do
    closed_seen: bool = False
    done: bool = False  # corrupt or hostile: skipped for good
    warned_torn: bool = False


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
        self.warnings: list[str] = []
        self.more = False  # the last poll stopped at max_bytes: poll again at once

    def poll(self, max_bytes: int | None = None) -> Update:
        """Read whatever is new since the last call.

        With ``max_bytes``, stop after about that many bytes of segments and set
        :attr:`more`, so a long history can be replayed a page at a time
        instead of sitting in memory whole.
        """
        update = Update()
        self.more = False
        budget = max_bytes
        listing = self.source.list()
        update.meta = self._read_document(fmt.META_FILE, listing)
        update.status = self._read_document(fmt.STATUS_FILE, listing)
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
            state.size_seen, state.closed_seen = size, closed
            read = self._read_segment(name, stream, state, closed, update)
            if budget is not None:
                budget -= read
        return update

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.warnings.append(message)

    def _read_document(self, name: str, listing: dict[str, tuple]) -> dict[str, Any] | None:
        version = listing.get(name)
        if version is None or self._documents.get(name) == version:
            return None
        self._documents[name] = version
        where = self.source.describe(name)
        try:
            return fmt.decode_document(self.source.read(name), where)
        except FileNotFoundError:
            self._documents.pop(name, None)
            return None
        except OSError as err:
            self._warn(f"skipped {where}: can not read it ({err})")
            return None
        except fmt.StoreError as err:
            self._warn(f"skipped {err}")
            return None

    def _read_segment(
        self, name: str, stream: str, state: _SegmentState, closed: bool, update: Update
    ) -> int:
        """Add the new frames of one segment to ``update``; returns the bytes read."""
        where = self.source.describe(name)
        try:
            data = self.source.read(name, state.offset)
        except FileNotFoundError:
            return 0
        except OSError as err:
            self._warn(f"skipped {where}: can not read it ({err})")
            state.done = True
            return 0
        consumed = 0
        try:
            for frame in fmt.iter_frames(data):
                if stream == fmt.SCALARS:
                    scalars, problems = fmt.scalar_records(frame.payload, where)
                    update.scalars.extend(scalars)
                else:
                    images, problems = fmt.image_records(frame.payload, where)
                    update.images.extend(images)
                for problem in problems:
                    # A bad record costs only itself: its neighbours and later
                    # frames are kept, and the offset moves past its frame.
                    self._warn(
                        f"skipped a bad record in {where} (frame at byte "
                        f"{state.offset + consumed}): {problem}"
                    )
                consumed = frame.end
        except fmt.CorruptFrameError as err:
            self._warn(f"skipped the rest of {where}: {err} (offset {state.offset + consumed})")
            state.done = True
        except fmt.StoreError as err:
            # The frame's checksum held but its payload does not unpickle (or
            # asks for a global): the writer is not ours, so trust nothing after.
            self._warn(f"skipped the rest of {where}: {err} (offset {state.offset + consumed})")
            state.done = True
        state.offset += consumed
        if closed and not state.done and consumed < len(data) and not state.warned_torn:
            # Normal for a moment on S3 (an older upload of a rolled segment);
            # kept and re-read if the file changes.
            state.warned_torn = True
            log.info("%s ends in an incomplete frame at byte %d", where, state.offset)
        return len(data)


class History:
    """All points of every series, keeping the latest value per (series, step).

    A resumed run that logs a step again replaces it; steps normally grow, so
    the common path is a plain append.
    """

    def __init__(self) -> None:
        self._series: dict[tuple[str, str], list[list]] = {}
        self._unsorted: set[tuple[str, str]] = set()

    def add(self, batch: list[fmt.SeriesColumns]) -> set[tuple[str, str]]:
        """Add a batch of series columns; returns the keys whose earlier points changed.

        A key is returned when a step arrived that is not after the series' last
        step, i.e. a consumer must redraw that series instead of appending.
        """
        rewound = set()
        for group, name, steps, epochs, times, values in batch:
            key = (group, name)
            cols = self._series.get(key)
            if cols is None:
                cols = self._series[key] = [[], [], [], []]
            if (cols[0] and steps and steps[0] <= cols[0][-1]) or any(
                b <= a for a, b in itertools.pairwise(steps)
            ):
                self._unsorted.add(key)
                rewound.add(key)
            cols[0].extend(steps)
            cols[1].extend(epochs)
            cols[2].extend(times)
            cols[3].extend(values)
        return rewound

    def keys(self) -> list[tuple[str, str]]:
        """Every (group, name) seen, in first-seen order."""
        return list(self._series)

    def series(
        self, key: tuple[str, str]
    ) -> tuple[list[int], list[float], list[float], list[float]]:
        """``(steps, epochs, wall_times, values)`` sorted by step, one point per step."""
        cols = self._series[key]
        if key in self._unsorted:
            latest = {step: i for i, step in enumerate(cols[0])}  # later index wins
            order = [latest[step] for step in sorted(latest)]
            cols[:] = [[col[i] for i in order] for col in cols]
            self._unsorted.discard(key)
        return cols[0], cols[1], cols[2], cols[3]

    @property
    def points(self) -> int:
        """Points held, counting replaced steps until the series is next read."""
        return sum(len(cols[0]) for cols in self._series.values())


def read_store(source: Source | str | os.PathLike[str]) -> tuple[History, StoreReader, Update]:
    """Read a whole store once: its history, the reader (with warnings) and the last documents."""
    reader = StoreReader(source)
    history = History()
    update = reader.poll()
    history.add(update.scalars)
    return history, reader, update
