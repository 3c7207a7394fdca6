"""The snapshot store: rank-0 writer and safe incremental reader of a run's logs (no torch).

Three wings: ``format/`` (frames, schemas, batches: the contract), ``write/`` (the
Recorder and its writer thread) and ``read/`` (the safe incremental reader). Names load
on first use, so a process that needs only the reader does not pay for the writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from run_core.lazy_names import LazyNames

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads each on first use
    from .format.frames import CorruptFrameError as CorruptFrameError
    from .format.frames import StoreError as StoreError
    from .format.frames import UnsafePickleError as UnsafePickleError
    from .read.history import History as History
    from .read.local_source import LocalSource as LocalSource
    from .read.store_reader import StoreReader as StoreReader
    from .read.store_reader import Update as Update
    from .read.store_reader import read_store as read_store
    from .write.recorder import Recorder as Recorder
    from .write.recorder import RecorderError as RecorderError

_NAMES = LazyNames(
    __name__,
    {
        "CorruptFrameError": ".format.frames",
        "StoreError": ".format.frames",
        "UnsafePickleError": ".format.frames",
        "History": ".read.history",
        "LocalSource": ".read.local_source",
        "StoreReader": ".read.store_reader",
        "Update": ".read.store_reader",
        "read_store": ".read.store_reader",
        "Recorder": ".write.recorder",
        "RecorderError": ".write.recorder",
    },
)
__all__ = sorted(_NAMES.owners)
__getattr__ = _NAMES.load
__dir__ = _NAMES.listed
