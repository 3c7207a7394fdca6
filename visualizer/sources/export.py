"""Every scalar of every run as CSV (``python -m visualizer export --pickle-dir DIR``),
or the other record kinds as JSON lines (``--kind text``, ``--kind all``...).

The reference reader: it goes through the store's own :func:`read_store` and
:class:`History` (latest value per step), not the visualizer's display path,
so tests can compare what visdom shows against it.
"""

from __future__ import annotations

import base64
import csv
import json
from typing import Any, TextIO

from snapshot_store import schema
from snapshot_store.reader import read_store
from snapshot_store.tags import tag_of

from .runs import LocalRuns, S3Runs, locate

HEADER = ("run", "group", "tag", "step", "epoch", "wall_time", "value")


def export_csv(location: str, out: TextIO, s3_client: Any = None) -> int:
    """Write all runs' scalars under ``location`` to ``out``; returns the rows written.

    ``tag`` is the name as logged (the TensorBoard tag, the framework's key), ``group``
    its part before the first ``/`` (empty for a name without one); rows are
    sorted by run, group, name and step; ``run`` is the name in the run's
    metadata. S3 failures raise :class:`~visualizer.sources.s3.S3ReadError`.
    """
    runs: LocalRuns | S3Runs = locate(location, s3_client)
    specs = runs.discover()
    if not specs:
        raise FileNotFoundError(f"no snapshot store found: expected {runs.waiting_for()}")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    rows = 0
    for spec in specs:
        history, _reader, _update = read_store(spec.source, images=False)
        for group, name in sorted(history.keys()):
            steps, epochs, times, values = history.series((group, name))
            for step, epoch, wall_time, value in zip(steps, epochs, times, values, strict=True):
                writer.writerow(
                    (
                        spec.name,
                        group,
                        tag_of(group, name),
                        step,
                        repr(float(epoch)),
                        repr(float(wall_time)),
                        repr(float(value)),
                    )
                )
                rows += 1
    return rows


# What ``--kind`` takes: the CSV of scalars (the default), one kind as JSON lines, or all of them.
EXPORT_KINDS = ("scalars", *sorted(schema.SCHEMAS), "image", "all")


def _plain_json(value: Any) -> Any:
    """``value`` with its bytes (PNG, GIF, WAV) as base64 text, so JSON can hold it."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _plain_json(v) for k, v in value.items()}
    return value


def export_jsonl(location: str, out: TextIO, kind: str = "all", s3_client: Any = None) -> int:
    """Write every record of ``kind`` (any but scalars; ``all``: every one) as JSON lines.

    One object a line: ``{"run", "kind", "tag", "step", "wall_time", "data"}``,
    ``data`` holding the kind's fields (see ``snapshot_store/kinds.py``); bytes
    (``png`` of images, ``gif`` of videos, ``wav`` of audio) are base64. Images
    are tagged by their logged name. Records come in the order they were written, per
    run. Returns the lines written.
    """
    runs: LocalRuns | S3Runs = locate(location, s3_client)
    specs = runs.discover()
    if not specs:
        raise FileNotFoundError(f"no snapshot store found: expected {runs.waiting_for()}")
    lines = 0
    for spec in specs:
        _history, _reader, update = read_store(spec.source)
        records = [(k, tag, step, wall, data) for k, tag, step, wall, data in update.extras]
        records += [
            ("image", tag_of(group, name), step, wall, {"png": png})
            for group, name, step, _epoch, wall, png in update.images
        ]
        for record_kind, tag, step, wall_time, data in records:
            if kind not in ("all", record_kind):
                continue
            line = {"run": spec.name, "kind": record_kind, "tag": tag, "step": step}
            line.update(wall_time=wall_time, data=_plain_json(data))
            out.write(json.dumps(line, allow_nan=True) + "\n")
            lines += 1
    return lines


def export(location: str, out: TextIO, kind: str = "scalars") -> int:
    """``--kind scalars``: :func:`export_csv`; any other kind: :func:`export_jsonl`."""
    return export_csv(location, out) if kind == "scalars" else export_jsonl(location, out, kind)


def add_kind_argument(parser: Any) -> None:
    """The export command's ``--kind`` option."""
    parser.add_argument(
        "--kind",
        choices=EXPORT_KINDS,
        default="scalars",
        help="scalars: CSV (the default); any other kind, or all: JSON lines, one record a line "
        '{"run", "kind", "tag", "step", "wall_time", "data"}, bytes as base64',
    )
