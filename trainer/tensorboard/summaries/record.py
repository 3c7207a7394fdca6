"""The record a summary builder returns, and the copies and numbers its builders take."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from snapshot_store.write.recorder import Encoder


class Record(NamedTuple):
    """One value of an extra kind, as :meth:`snapshot_store.Recorder.log_record` takes it."""

    kind: str
    tag: str
    value: Any  # the kind's data, or the raw input ``encode`` makes it of on the writer thread
    encode: Encoder | None = None


def private_copy(value: Any) -> Any:
    """A copy the caller may change at once: a queued ``clone`` for a tensor, numpy otherwise."""
    if hasattr(value, "detach") and hasattr(value, "clone"):  # a torch tensor, duck-typed
        return value.detach().clone()
    if isinstance(value, str):
        raise TypeError(f"expected numbers, got the string {value[:40]!r}")
    return np.array(value, copy=True)


def one_number(value: Any, what: str) -> float:
    """``value`` (a number or a one-element tensor) as a float; TypeError naming ``what`` else."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    return float(value)
