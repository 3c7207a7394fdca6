"""``add_embedding``: an embedding's 2-D projection, computed on the writer thread."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def embedding(tag: str, mat: Any, metadata: Iterable[Any] | None) -> Record:
    """The points of ``mat`` (N, D) on their first two principal components, each labelled
    with its ``metadata`` row (columns joined by tabs, as TensorBoard's TSV)."""
    labels = None
    if metadata is not None:
        rows = [m if isinstance(m, (list, tuple)) else [m] for m in metadata]
        labels = ["\t".join(str(v) for v in row) for row in rows]
    return Record("points", tag, (private_copy(mat), labels), encoders.points_2d)
