"""Which local folders hold a snapshot store, asked as cheaply as a search of 10,000 runs
needs (one ``stat`` a folder where listing it costs more).

A directory of runs is shared ground: any one entry may be a symlink loop, a folder
closed to us, one deleted while listed, or a link to another person's store. None of
them ends the search for the others: a folder that can not be looked into holds no
store here, and a link that leads out of the root is not followed (docs/bad-input.md).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from snapshot_store.format import frames as fmt

log = logging.getLogger(__name__)


def is_store(path: Path) -> bool:
    """True when ``path`` holds snapshot store files."""
    try:
        with os.scandir(path) as entries:
            return any(
                e.name in (fmt.META_FILE, fmt.STATUS_FILE) or fmt.parse_segment_name(e.name)
                for e in entries
            )
    except OSError:  # absent, closed, a symlink loop (ELOOP), gone while listed
        return False


def subfolders(root: str | Path) -> list[str]:
    """The paths of ``root``'s folders not hidden, in name order; an entry that can not be
    looked at (a symlink loop, gone while listed) is none, and an unlistable root has none."""
    try:
        with os.scandir(root) as entries:
            return sorted(e.path for e in entries if not e.name.startswith(".") and _is_dir(e))
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # ELOOP: is_dir() raises it where a plain stat's ENOENT is False
        return False


def leaves(root: str, path: str) -> bool:
    """Whether ``path`` (under ``root``, already resolved) leads outside it through a
    symlink: another person's store is not read because a link to it was left here."""
    if not os.path.islink(path):  # noqa: PTH114 - strings, as in has_documents
        return False
    target = os.path.realpath(path)
    return target != root and not target.startswith(root + os.sep)


def has_documents(store: str) -> bool:
    """True when ``store`` holds a run's meta or status: one stat, where listing it costs more.
    (Strings, not Paths: building 20,000 Paths was half of finding 10,000 runs.)

    A store folder that may not be looked into counts: reading the run then says why,
    where an error here would end the search for every run.
    """
    for name in (fmt.META_FILE, fmt.STATUS_FILE):
        try:
            mode = os.stat(f"{store}{os.sep}{name}").st_mode  # noqa: PTH116 - see above
        except PermissionError:
            return is_folder(store)
        except OSError:  # not written (yet), or a link that leads nowhere (ELOOP)
            continue
        if stat.S_ISREG(mode):
            return True
    return False


def is_folder(path: str) -> bool:
    """Whether ``path`` is a folder: not where a folder above it is closed (a lost+found)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)  # noqa: PTH116 - a string, as above
    except OSError:
        return False


def folder_stamp(folder: Path) -> tuple[int, int, int] | None:
    """A folder's mtime, inode and device (None: no such folder): its mtime changes as an
    entry in it comes or goes."""
    try:
        st = folder.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ino, st.st_dev
