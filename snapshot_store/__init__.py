"""The snapshot store: rank-0 writer and safe incremental reader of a run's logs (no torch).

Names load on first use, so a process that needs only a small part (the rank,
``plain``) does not pay for numpy and Pillow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each on first use
    from .atomic import atomic_file as atomic_file
    from .atomic import ensure_writable_dir as ensure_writable_dir
    from .atomic import write_atomic as write_atomic
    from .endings import ended_state as ended_state
    from .exit_codes import ExitCode as ExitCode
    from .frames import CorruptFrameError as CorruptFrameError
    from .frames import StoreError as StoreError
    from .frames import UnsafePickleError as UnsafePickleError
    from .history import History as History
    from .local_source import LocalSource as LocalSource
    from .rank import LaunchEnv as LaunchEnv
    from .rank import LaunchError as LaunchError
    from .rank import global_rank as global_rank
    from .rank import read_launch_env as read_launch_env
    from .reader import StoreReader as StoreReader
    from .reader import Update as Update
    from .reader import read_store as read_store
    from .recorder import Recorder as Recorder
    from .recorder import RecorderError as RecorderError
    from .tags import key_of as key_of
    from .tags import tag_of as tag_of
    from .values import REDACTED as REDACTED
    from .values import plain as plain
    from .values import redact as redact

_EXPORTS = {
    "CorruptFrameError": "frames",
    "StoreError": "frames",
    "UnsafePickleError": "frames",
    "atomic_file": "atomic",
    "ensure_writable_dir": "atomic",
    "write_atomic": "atomic",
    "ExitCode": "exit_codes",
    "ended_state": "endings",
    "LaunchEnv": "rank",
    "LaunchError": "rank",
    "global_rank": "rank",
    "read_launch_env": "rank",
    "History": "history",
    "LocalSource": "local_source",
    "StoreReader": "reader",
    "Update": "reader",
    "read_store": "reader",
    "Recorder": "recorder",
    "RecorderError": "recorder",
    "key_of": "tags",
    "tag_of": "tags",
    "REDACTED": "values",
    "plain": "values",
    "redact": "values",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'snapshot_store' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
