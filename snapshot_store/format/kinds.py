"""Record kinds beyond scalars and images (format version 2): the extras stream.

They live in their own stream, ``extras-NNNNNNNN.pickle``, one frame per batch::

    {"v": 2, "records": [(kind, tag, step, wall_time, data), ...]}

``data`` is a dict of plain values whose fields each kind fixes
(:data:`~.schema.SCHEMAS`). A store of format version 1 simply has no
``extras`` segment; a version-1 reader does not list these files, so it reads
the rest of a version-2 store unchanged. Like :mod:`.frames`, this module
never imports torch.
"""

from __future__ import annotations

from snapshot_store.format.batches import encode_batch, records_of, split_records
from snapshot_store.format.schema import record_problem

ExtraRecord = tuple[str, str, int, float, dict]

# hparams rows, as TensorBoard's table has one per session: every record tagged
# HPARAMS_TAG (an add_hparams call without a run name) is a row of its own; a
# record with another tag (a run name; OWN_RUN_TAG for the hparams summaries
# given to the writer's own file writer) replaces that tag's earlier row. A NaN
# metric is not given: its value is the last of the scalar logged under that tag.
HPARAMS_TAG = "hparams"
OWN_RUN_TAG = "."


def encode_extra_batch(records: list[ExtraRecord]) -> bytes:
    """Frame bytes for one batch of extra records (several frames when it is huge)."""
    return encode_batch("records", records, split_records)


def extra_records(payload: bytes, source: str) -> tuple[list[ExtraRecord], list[str]]:
    """The valid records of one extras frame, and why each invalid one was left out."""
    return records_of(payload, source, "records", "extras", record_problem)
