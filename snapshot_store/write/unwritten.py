"""What a recorder could not write before it closed (a full disk), counted for the run's status.

Counted from the frames themselves, once, when the recorder closes: the
writer's hot path keeps no count, and a full disk is the rare case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from snapshot_store.format import frames as fmt
from snapshot_store.format.batches import image_records, scalar_records
from snapshot_store.format.kinds import extra_records

_SOURCE = "<frames the recorder could not write>"


def count_records(stream: str, batch: bytes) -> int:
    """Scalar points, images or extra records in the frames of one encoded batch."""
    total = 0
    for frame in fmt.iter_frames(batch):
        if stream == fmt.SCALARS:
            series, _ = scalar_records(frame.payload, _SOURCE)
            total += sum(len(steps) for _, _, steps, *_ in series)
        elif stream == fmt.IMAGES:
            total += len(image_records(frame.payload, _SOURCE)[0])
        else:
            total += len(extra_records(frame.payload, _SOURCE)[0])
    return total


def unwritten_records(batches: Mapping[str, Iterable[bytes]]) -> dict[str, int]:
    """Records per stream in ``batches`` (stream -> encoded batches); streams with none left out."""
    counts = {
        stream: sum(count_records(stream, batch) for batch in pending)
        for stream, pending in batches.items()
    }
    return {stream: n for stream, n in counts.items() if n}
