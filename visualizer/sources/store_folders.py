"""Which local folders hold a snapshot store, asked as cheaply as a search of 10,000 runs
needs (one ``stat`` a folder where listing it costs more)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from snapshot_store.format import frames as fmt


def is_store(path: Path) -> bool:
    """True when ``path`` holds snapshot store files."""
    try:
        with os.scandir(path) as entries:
            return any(
                e.name in (fmt.META_FILE, fmt.STATUS_FILE) or fmt.parse_segment_name(e.name)
                for e in entries
            )
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return False


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
        except OSError:  # not written (yet)
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
