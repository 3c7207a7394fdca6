"""The snapshot store: rank-0 writer and safe incremental reader of a run's logs (no torch).

Names load on first use, so a process that needs only the framing (a transfer
worker, say) does not pay for numpy and Pillow.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CorruptFrameError": "frames",
    "StoreError": "frames",
    "UnsafePickleError": "frames",
    "History": "reader",
    "LocalSource": "reader",
    "StoreReader": "reader",
    "Update": "reader",
    "read_store": "reader",
    "Recorder": "recorder",
    "detect_rank": "recorder",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'snapshot_store' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
