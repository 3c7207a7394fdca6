"""Every scalar of every run as CSV (``python -m visualizer export --pickle-dir DIR``),
or the other record kinds as JSON lines (``--kind text``, ``--kind all``...), or a row a
run (``--kind runs``); ``--format parquet`` writes the scalars or the runs as one Parquet
file with typed columns, ``--runs REGEX`` only the runs whose name it matches.

The reference reader: it goes through the store's own :func:`read_store` and
:class:`History` (every value in logged order), not the visualizer's display path,
so tests can compare what visdom shows against it.
"""

from __future__ import annotations

import base64
import csv
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from run_core.tags import tag_of
from snapshot_store.format import schema
from snapshot_store.read.store_reader import read_store
from visualizer.api.client import read_runs
from visualizer.api.points import read_series
from visualizer.api.table import (
    POINT_COLUMNS,
    formula_safe,
    points_columns,
    runs_columns,
    write_parquet,
    write_runs_csv,
)
from visualizer.patterns import searcher

from . import graph_events, projector
from .runs import LocalRuns, RunSpec, locate
from .s3 import S3ReadError
from .s3_runs import S3Runs

log = logging.getLogger(__name__)

HEADER = POINT_COLUMNS
FORMATS = ("csv", "parquet")
T = TypeVar("T")


class RunReads:
    """Each run read in turn; a run S3 denies (``S3ReadError.one_run``: a bucket policy on its
    prefix) is told of once and left out, the others go on. :meth:`check`, once the others
    are written, fails the export naming the runs left out; any other S3 failure ends it."""

    def __init__(self, specs: Iterable[RunSpec]) -> None:
        self.specs = list(specs)
        self.left_out: list[tuple[str, S3ReadError]] = []

    def each(self, read: Callable[[RunSpec], T]) -> Iterator[tuple[RunSpec, T]]:
        """``(spec, read(spec))`` of every run but those left out."""
        for spec in self.specs:
            try:
                value = read(spec)
            except S3ReadError as err:
                if not err.one_run:
                    raise
                log.warning("run %s left out of the export: %s", spec.name, err)
                self.left_out.append((spec.name, err))
                continue
            yield spec, value

    def check(self) -> None:
        """Raise the :class:`S3ReadError` that tells of the runs left out, if any."""
        if self.left_out:
            names = ", ".join(name for name, _ in self.left_out)
            raise S3ReadError(
                f"{len(self.left_out)} of {len(self.specs)} runs left out of the export, "
                f"S3 denied reading them (see above): {names}; the others were written",
                self.left_out[0][1].exit_code,
            )


def _selected(names: list[str], runs: str, root: str) -> list[bool]:
    """Which of the runs ``names`` the regular expression ``runs`` keeps (searched in linear
    time: :mod:`visualizer.patterns`; "": all); FileNotFoundError (one line) when it keeps none."""
    search = searcher(runs)
    kept = [search(name) for name in names]
    if names and not any(kept):
        raise FileNotFoundError(f"--runs {runs!r} matches none of the {len(names)} runs at {root}")
    return kept


def find_specs(root: str, s3_client: Any = None, runs: str = "") -> list[RunSpec]:
    """The runs at ``root`` named by ``runs``; FileNotFoundError when there is none."""
    found: LocalRuns | S3Runs = locate(root, s3_client)
    specs = found.discover()
    if not specs:
        raise FileNotFoundError(f"no snapshot store found: expected {found.waiting_for()}")
    kept = _selected([spec.name for spec in specs], runs, root)
    return [spec for spec, keep in zip(specs, kept, strict=True) if keep]


def export_csv(
    root: str, out: IO[str], s3_client: Any = None, runs: str = "", raw: bool = False
) -> int:
    """Write all runs' scalars under ``root`` to ``out``; returns the rows written.

    ``tag`` is the name as logged (the TensorBoard tag, the framework's key), ``group``
    its part before the first ``/`` (empty for a name without one); rows are
    sorted by run, group, name and step; ``run`` is the name in the run's
    metadata; text cells are :func:`~visualizer.api.table.formula_safe` unless ``raw``. S3
    failures raise :class:`~visualizer.sources.s3.S3ReadError`.
    """
    reads = RunReads(find_specs(root, s3_client, runs))
    cell = (lambda text: text) if raw else formula_safe
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    rows = 0
    for spec, (history, _reader, _update) in reads.each(
        lambda spec: read_store(spec.source, images=False)
    ):
        for group, name in sorted(history.keys()):
            steps, epochs, times, values = history.series((group, name))
            texts = (cell(spec.name), cell(group), cell(tag_of(group, name)))
            for step, epoch, wall_time, value in zip(steps, epochs, times, values, strict=True):
                writer.writerow(
                    (
                        *texts,
                        step,
                        repr(float(epoch)),
                        repr(float(wall_time)),
                        repr(float(value)),
                    )
                )
                rows += 1
    reads.check()
    return rows


# The kinds written as TensorBoard's own files into --out DIR, a folder a run: the
# projector's files, the traced graphs' event files.
FILE_KINDS = {
    "projector": projector.write_projector,
    "graph_events": graph_events.write_graph_events,
}
# What ``--kind`` takes: the CSV of scalars (the default), a row a run, one kind as JSON
# lines, or all of them, or TensorBoard's files.
EXPORT_KINDS = ("scalars", "runs", *sorted(schema.SCHEMAS), "image", "all", *FILE_KINDS)
TABLES = ("scalars", "runs")  # the kinds --format parquet writes


def _plain_json(value: Any) -> Any:
    """``value`` with its bytes (PNG, GIF, WAV) as base64 text, so JSON can hold it."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _plain_json(v) for k, v in value.items()}
    if isinstance(value, list):  # a table's rows, their image cells bytes
        return [_plain_json(v) for v in value]
    return value


def _captions(captions: list[list[str]]) -> dict[str, list[str]]:
    """An image's ``captions`` field, when it was stored with any."""
    return {"captions": captions[0]} if captions else {}


def export_jsonl(
    root: str, out: IO[str], kind: str = "all", s3_client: Any = None, runs: str = ""
) -> int:
    """Write every record of ``kind`` (any but scalars; ``all``: every one) as JSON lines.

    One object a line: ``{"run", "kind", "tag", "step", "wall_time", "data"}``,
    ``data`` holding the kind's fields (see ``snapshot_store/format/kinds.py``); bytes
    (``png`` of images, ``gif`` of videos, ``wav`` of audio) are base64. Images
    are tagged by their logged name, with their ``captions`` when logged with any. Records
    come in the order they were written, per run. Returns the lines written.
    """
    reads = RunReads(find_specs(root, s3_client, runs))
    lines = 0
    for spec, (_history, _reader, update) in reads.each(lambda spec: read_store(spec.source)):
        records = [(k, tag, step, wall, data) for k, tag, step, wall, data in update.extras]
        records += [
            ("image", tag_of(group, name), step, wall, {"png": png, **_captions(captions)})
            for group, name, step, _epoch, wall, png, *captions in update.images
        ]
        for record_kind, tag, step, wall_time, data in records:
            if kind not in ("all", record_kind):
                continue
            line = {"run": spec.name, "kind": record_kind, "tag": tag, "step": step}
            line.update(wall_time=wall_time, data=_plain_json(data))
            out.write(json.dumps(line, allow_nan=True) + "\n")
            lines += 1
    reads.check()
    return lines


def export_runs(
    root: str,
    out: IO[Any],
    fmt: str = "csv",
    s3_client: Any = None,
    runs: str = "",
    raw: bool = False,
) -> int:
    """Write a row a run (see :mod:`visualizer.api.table`) as CSV (``raw``: cells as stored),
    or Parquet (values as stored) to a binary ``out``; the rows written. Only the runs'
    documents are read."""
    found = read_runs(root, s3_client)
    kept = _selected([run.name for run in found], runs, root)
    columns = runs_columns(run for run, keep in zip(found, kept, strict=True) if keep)
    return write_parquet(columns, out) if fmt == "parquet" else write_runs_csv(columns, out, raw)


def export_files(root: str, kind: str, out_dir: str, s3_client: Any = None, runs: str = "") -> int:
    """Write every run's records of the file ``kind`` (:data:`FILE_KINDS`) as TensorBoard's
    files under ``out_dir``, a folder a run; how many records were written."""
    write_run, out = FILE_KINDS[kind], Path(out_dir)
    reads = RunReads(find_specs(root, s3_client, runs))
    written = sum(count for _spec, count in reads.each(lambda spec: write_run(spec, out)))
    reads.check()
    return written


def export(
    root: str,
    out: IO[Any],
    kind: str = "scalars",
    fmt: str = "csv",
    runs: str = "",
    s3_client: Any = None,
    raw: bool = False,
) -> int:
    """``--kind scalars``: :func:`export_csv` (or Parquet); ``runs``: :func:`export_runs`; any
    other kind: :func:`export_jsonl`. ``out`` is binary for Parquet; ``raw``: CSV cells as
    stored (no ``'`` before a formula). The rows written."""
    if fmt == "parquet" and kind not in TABLES:
        raise ValueError(f"--format parquet writes --kind {' or '.join(TABLES)}, not {kind}")
    if kind == "runs":
        return export_runs(root, out, fmt, s3_client, runs, raw)
    if kind != "scalars":
        return export_jsonl(root, out, kind, s3_client, runs)
    if fmt == "parquet":
        reads = RunReads(find_specs(root, s3_client, runs))
        named = reads.each(lambda spec: read_series(spec.source))
        rows = write_parquet(points_columns((spec.name, series) for spec, series in named), out)
        reads.check()
        return rows
    return export_csv(root, out, s3_client, runs, raw)


def add_export_arguments(parser: Any, regex: Callable[[str], str] = str) -> None:
    """The export command's ``--kind``, ``--format``, ``--output``, ``--raw-csv`` and ``--runs``
    options (``regex``: the
    follow command's argparse type of ``--runs``, so both refuse a bad one alike)."""
    parser.add_argument(
        "--kind",
        choices=EXPORT_KINDS,
        default="scalars",
        help="scalars: a row a point (the default); runs: a row a run (name, state, steps, start, "
        "duration, config.*, summary.*); any other kind, or all: JSON lines, one record a line "
        '{"run", "kind", "tag", "step", "wall_time", "data"}, bytes as base64; projector, graph_events: '
        "each run's embeddings, or traced graph, as TensorBoard's own files in --out DIR",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="--kind projector's or graph_events' folder: DIR/<run>/projector_config.pbtxt and "
        "the files it names, or DIR/<run>/events.out.tfevents.* (tensorboard --logdir DIR)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="csv",
        help="csv (the default), or parquet: one Parquet file with typed columns, of --kind "
        "scalars or runs (needs pyarrow: pip install 'remote-train-monitor[parquet]')",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write to FILE, whole or not at all (a temporary file beside it, renamed once "
        "complete), instead of standard output",
    )
    parser.add_argument(
        "--raw-csv",
        action="store_true",
        help="write CSV cells as stored: by default a text cell beginning with =, +, -, @, tab "
        "or carriage return gets a leading ' so that a spreadsheet shows it, not runs it",
    )
    parser.add_argument(
        "--runs",
        type=regex,
        default="",
        metavar="REGEX",
        help="only the runs whose name matches REGEX (searched, in linear time: RE2; default: every run)",
    )
