"""``add_tensor``: a tensor's shape, dtype and values."""

from __future__ import annotations

from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def tensor(tag: str, value: Any) -> Record:
    """A tensor, read into shape, dtype and values on the writer thread."""
    return Record("tensor", tag, private_copy(value), encoders.encode_tensor)
