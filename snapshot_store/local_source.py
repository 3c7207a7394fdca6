"""The snapshot store's files on a local or mounted filesystem, for :class:`~.reader.StoreReader`."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

from . import frames as fmt

log = logging.getLogger(__name__)

__all__ = ["LocalSource"]


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
        # Paths as strings where a file is named: joining Paths was a tenth of listing
        # 10,000 runs (two documents each, each named for reading and for messages).
        self._dir = os.fspath(self.root)
        self._warn = warn or (lambda message: log.warning("%s", message))
        self._refused: set[str] = set()  # names already warned about: one warning each

    def describe(self, name: str) -> str:
        return f"{self._dir}{os.sep}{name}" if name else self._dir

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
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{self.describe(name)} is not a regular file")
            f.seek(offset)
            if length is None:
                return f.read()
            # read(n) allocates n bytes first: a 500-byte document asked for with the
            # 64 MiB limit of any document cost 4x its read, 10,000 runs over. A file
            # grown since the fstat is read to the size it had then, like any poll.
            return f.read(max(0, min(length, st.st_size - offset)))
