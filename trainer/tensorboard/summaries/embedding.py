"""``add_embedding``: the projector's features, metadata and sprite, and a 2-D view."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def embedding(
    tag: str,
    mat: Any,
    metadata: Sequence[Any] | None,
    label_img: Any = None,
    metadata_header: Sequence[Any] | None = None,
) -> Record:
    """The embedding ``mat`` (N, D) as TensorBoard's projector writes it: ``metadata.tsv``'s
    lines (``str`` of each row, or a header and tab-joined columns), the label images
    (N, C, H, W) for its sprite; on the writer thread also its first two principal
    components, each point labelled with its metadata row."""
    labels = lines = None
    if metadata is not None:
        rows = list(metadata)
        if not metadata_header:
            labels = lines = [str(row) for row in rows]
        else:
            if rows and len(metadata_header) != len(rows[0]):
                raise ValueError(
                    f"metadata_header has {len(metadata_header)} columns, metadata {len(rows[0])}"
                )
            labels = ["\t".join(str(v) for v in row) for row in rows]
            lines = ["\t".join(str(v) for v in metadata_header), *labels]
    images = None if label_img is None else private_copy(label_img)
    raw = (private_copy(mat), labels, lines or [], images)
    return Record("embedding", tag, raw, encoders.encode_embedding)
