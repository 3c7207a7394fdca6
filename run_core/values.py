"""Plain values: what a store document (and a ``weights_only`` checkpoint) may hold.

Both readers refuse globals: :class:`~snapshot_store.format.frames.SafeUnpickler` and
``torch.load(..., weights_only=True)`` load builtins only, so anything a run
records about itself (options, status fields) goes through :func:`plain` first,
and through :func:`~run_core.redaction.redact` when it may hold secrets.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

_SCALARS = (bool, int, float, str, bytes)


def plain(value: Any) -> Any:
    """``value`` made of None, bool, int, float, str, bytes, list and dict (str keys) only.

    Mappings become dicts with str keys, other collections lists, paths
    ``os.fspath`` strings, and anything else its ``str()``.
    """
    if value is None or type(value) in _SCALARS:
        return value
    # A subclass (numpy.float64, an IntEnum) would pickle as a global that the
    # restricted readers refuse; its builtin base keeps the value.
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)  # the characters, not an Enum's "Cls.NAME"
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def amount(size: int) -> str:
    """A byte count as people read it: ``312.5 kB``, ``1.2 MB``."""
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size / 1e3:.1f} kB"
