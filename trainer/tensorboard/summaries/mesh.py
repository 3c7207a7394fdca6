"""``add_mesh``: the first mesh of a batch, read on the writer thread."""

from __future__ import annotations

from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def mesh(tag: str, vertices: Any, faces: Any | None, colors: Any | None) -> Record:
    """Vertices (B, N, 3), and faces (B, M, 3) and colors (B, N, 3) when given."""
    raw = tuple(None if v is None else private_copy(v) for v in (vertices, faces, colors))
    return Record("mesh", tag, raw, encoders.encode_mesh)
