"""The resident memory of a process and its descendants (the visdom server a viewer started).

Read from Linux's ``/proc``: where it is absent, :func:`tree_rss` says None and
``--memory-budget`` counts the runs' series alone.
"""

from __future__ import annotations

import os
from pathlib import Path

_PROC = Path("/proc")
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (every thread's), from ``/proc/PID/task/*/children``."""
    found: list[int] = []
    try:
        for task in (_PROC / str(pid) / "task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    except (OSError, ValueError):
        pass  # ended meanwhile, or a kernel without the children file: none known
    return found


def _rss(pid: int) -> int:
    """Resident bytes of ``pid`` (0 once it ended)."""
    try:
        return int((_PROC / str(pid) / "statm").read_text().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def tree(pid: int) -> list[int]:
    """Process ``pid`` and every descendant still running (as ``/proc`` lists them)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += _children(current)
    return found


def tree_rss(pid: int) -> int | None:
    """Resident bytes of process ``pid`` and every descendant, summed; None where ``/proc``
    does not tell (or ``pid`` ended)."""
    if not (_PROC / str(pid) / "statm").exists():
        return None
    return sum(_rss(each) for each in tree(pid))
