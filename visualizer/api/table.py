"""A sweep as one table: a row a run (``--kind runs``) or a row a point (``--kind scalars``),
written as CSV or as Parquet with typed columns (pyarrow, the ``parquet`` extra).

The runs table: ``name, state, steps`` (the last step), ``start`` (UTC), ``duration``
(seconds), then ``config.KEY`` columns (nested keys dotted, lists as JSON) and
``summary.TAG`` columns (each series' last value, or the summary the run set, nested keys
dotted), in the order first seen.
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Iterable
from typing import IO, Any

import numpy as np

from run_core.tags import key_of
from visualizer.model.summary import dotted

from .points import SeriesPoints
from .run import ApiRun

PARQUET_MISSING = "--format parquet needs pyarrow: pip install 'remote-train-monitor[parquet]'"
RUN_COLUMNS = ("name", "state", "steps", "start", "duration")
POINT_COLUMNS = ("run", "group", "tag", "step", "epoch", "wall_time", "value")

Columns = dict[str, Any]  # a column's name -> its values (a list, or a numpy array)


def run_row(run: ApiRun) -> dict[str, Any]:
    """One run's row of the runs table (see the module)."""
    row: dict[str, Any] = {"name": run.name, "state": run.state, "steps": run.step}
    row["start"] = run.start
    row["duration"] = run.duration
    for key, value in run.config.items():
        dotted(f"config.{key}", value, row)
    for tag, stats in run.stats.items():
        row[f"summary.{tag}"] = stats.last
    for key, value in run.summary.items():
        if not key.startswith("_"):  # the step, time and runtime: columns of their own
            dotted(f"summary.{key}", value, row)
    return row


def runs_columns(runs: Iterable[ApiRun]) -> Columns:
    """The runs table's columns, None where a run has no such value."""
    rows = [run_row(run) for run in runs]
    names = dict.fromkeys(RUN_COLUMNS)
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [row.get(name) for row in rows] for name in names}


def points_columns(named: Iterable[tuple[str, list[SeriesPoints]]]) -> Columns:
    """Every point of every run's series (:func:`~visualizer.api.points.read_series`), a row
    each, by run, then series (group, name), then step."""
    names: list[str] = []
    tags: list[str] = []
    lengths: list[int] = []
    parts: list[list[np.ndarray]] = [[], [], [], []]
    for name, run_series in named:
        for series in sorted(run_series, key=lambda s: key_of(s.tag)):
            names.append(name)
            tags.append(series.tag)
            lengths.append(len(series.steps))
            for part, column in zip(parts, (series.steps, series.epochs, series.times,
                                            series.values), strict=True):  # fmt: skip
                part.append(column)
    codes = np.repeat(np.arange(len(names), dtype=np.int32), lengths)
    steps, epochs, times, values = (
        np.concatenate(part) if part else np.zeros(0, dtype) for part, dtype in
        zip(parts, (np.int64, np.float64, np.float64, np.float64), strict=True)
    )  # fmt: skip
    groups = [key_of(tag)[0] for tag in tags]
    return {"run": (codes, names), "group": (codes, groups), "tag": (codes, tags),
            "step": steps, "epoch": epochs, "wall_time": times, "value": values}  # fmt: skip


def _utc(seconds: Any) -> Any:
    if seconds is None:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC)


# What a spreadsheet takes a cell beginning with as a formula (OWASP, CSV injection): such a
# text cell is written with a leading ' unless the export is asked for raw cells.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(value: Any) -> Any:
    """``value``, a text one that a spreadsheet would run as a formula with a leading ``'``
    (``=HYPERLINK(...)`` shows as text); numbers (``-0.5``) are written as they are."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def write_runs_csv(columns: Columns, out: IO[str], raw: bool = False) -> int:
    """The runs table as CSV (``start`` as ISO 8601 UTC), text cells :func:`formula_safe`
    unless ``raw``; the rows written."""
    writer = csv.writer(out, lineterminator="\n")
    cell = (lambda value: value) if raw else formula_safe
    writer.writerow(map(cell, columns))
    values = [columns[name] for name in columns]
    rows = 0
    for row in zip(*values, strict=True):
        cells = dict(zip(columns, row, strict=True))
        start = _utc(cells["start"])
        cells["start"] = start.isoformat() if start is not None else None
        writer.writerow("" if value is None else cell(value) for value in cells.values())
        rows += 1
    return rows


def _typed(values: list[Any]) -> Any:
    """A pyarrow array of one column: bools, ints, floats, else strings (mixed types)."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if present and all(type(v) is bool for v in present):
        return pa.array(values, pa.bool_())
    if present and all(type(v) is int for v in present):
        try:
            return pa.array(values, pa.int64())
        except OverflowError:  # beyond int64: kept exactly, as text
            pass
    elif present and all(type(v) in (int, float) for v in present):
        return pa.array(values, pa.float64())
    return pa.array([None if v is None else str(v) for v in values], pa.string())


def arrow_table(columns: Columns) -> Any:
    """``columns`` (of :func:`runs_columns` or :func:`points_columns`) as a pyarrow Table;
    ImportError naming the extra when pyarrow is not installed."""
    try:
        import pyarrow as pa
    except ImportError:
        raise ImportError(PARQUET_MISSING) from None
    arrays = {}
    for name, column in columns.items():
        if isinstance(column, tuple):  # a code a row into the names of the run or series
            codes, labels = column
            arrays[name] = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(labels))
        elif isinstance(column, np.ndarray):
            arrays[name] = pa.array(column)
        elif name == "start":
            arrays[name] = pa.array([_utc(v) for v in column], pa.timestamp("us", tz="UTC"))
        else:
            arrays[name] = _typed(column)
    return pa.table(arrays)


def write_parquet(columns: Columns, out: IO[bytes]) -> int:
    """``columns`` as one Parquet file written to ``out``; the rows written."""
    table = arrow_table(columns)
    import pyarrow.parquet as pq

    pq.write_table(table, out)
    return int(table.num_rows)
