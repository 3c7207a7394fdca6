"""The snapshot store's files on a local or mounted filesystem, for :class:`~.reader.StoreReader`."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

from snapshot_store.format import frames as fmt

log = logging.getLogger(__name__)

__all__ = ["LocalSource"]


class LocalSource:
    """A store directory on a local or mounted filesystem.

    Only regular files, or symlinks to regular files inside the store, are
    listed or read: opening a FIFO or a device named like a store file could
    block the reader forever or touch hardware, and a symlink out of the store
    would read files the store does not own.
    """

    # Slots, and no set or closure till a file is refused: a viewer of 100,000 runs holds a
    # source a run (those were some 36 MB of it).
    __slots__ = ("_dir", "_refused", "_root", "_warn")

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        warn: Callable[[str], None] | None = None,
    ) -> None:
        # Paths as strings where a file is named: joining Paths was a tenth of listing
        # 10,000 runs (two documents each, each named for reading and for messages), and
        # making the Path a quarter of listing them from the Api's cache: made when asked.
        self._dir = _normal(store_dir)
        self._root: Path | None = None
        self._warn = warn
        self._refused: set[str] | None = None  # names already warned about: one warning each

    @property
    def root(self) -> Path:
        """The store directory."""
        if self._root is None:
            self._root = Path(self._dir)
        return self._root

    def describe(self, name: str) -> str:
        return f"{self._dir}{os.sep}{name}" if name else self._dir

    def _refuse(self, name: str, why: str) -> None:
        if self._refused is None:
            self._refused = set()
        if name not in self._refused:
            self._refused.add(name)
            message = f"skipped {self.describe(name)}: {why}"
            if self._warn is None:
                log.warning("%s", message)
            else:
                self._warn(message)

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

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
        # A plain file name that is not a symlink is opened as it is (O_NOFOLLOW refuses
        # a link): resolving every path cost more than the read itself, 10,000 runs over.
        plain = "/" not in name and name not in (".", "..")
        try:
            fd = os.open(f"{self._dir}{os.sep}{name}", flags) if plain else -1
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise
            fd = -1
        if fd < 0:  # a symlink, or a path: only inside the store
            path = (self.root / name).resolve()
            if not self._inside(path):  # checked here: the entry may have changed since list()
                raise OSError(f"{self.describe(name)} leads outside the store")
            fd = os.open(path, flags)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{self.describe(name)} is not a regular file")
            # Ask for no more than the file holds: a read allocates what is asked first, and
            # a 500-byte document asked for with the 64 MiB limit of any document cost 4x
            # its read, 10,000 runs over (os.read: no buffered file object, half again).
            size = max(0, st.st_size - offset)
            if offset:
                os.lseek(fd, offset, os.SEEK_SET)
            if length is not None:  # a file grown since the fstat: read as it was then
                return _read_fd(fd, min(length, size))
            return _read_fd(fd, size) + _read_fd(fd, None)  # and what was added since
        finally:
            os.close(fd)


_POSIX = os.sep == "/" and os.altsep is None


def _normal(path: str | os.PathLike[str]) -> str:
    """``path`` as ``str(Path(path))`` writes it; a plain one (the runs' folders, joined as
    text) as it is, without making the Path."""
    text = os.fspath(path)
    odd = not _POSIX or not text or text[-1] == "/" or text[:2] == "./"
    if odd or "//" in text or "/." in text:
        return os.fspath(Path(text))
    return text


def _read_fd(fd: int, length: int | None) -> bytes:
    """``length`` bytes (None: all there is) from where ``fd`` is, fewer where the file ends."""
    parts, left = [], length
    while left is None or left > 0:
        part = os.read(fd, (1 << 20) if left is None else left)
        if not part:
            break
        parts.append(part)
        left = None if left is None else left - len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)
