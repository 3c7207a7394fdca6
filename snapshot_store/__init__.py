"""The snapshot store: rank-0 writer and safe incremental reader of a run's logs (no torch)."""

from .format import CorruptFrameError, StoreError, UnsafePickleError
from .reader import History, LocalSource, StoreReader, Update, read_store
from .recorder import Recorder, detect_rank

__all__ = [
    "CorruptFrameError",
    "History",
    "LocalSource",
    "Recorder",
    "StoreError",
    "StoreReader",
    "UnsafePickleError",
    "Update",
    "detect_rank",
    "read_store",
]
