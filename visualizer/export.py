"""Every scalar of every run as CSV (``python -m visualizer export --pickle-dir DIR``).

The reference reader: it goes through the store's own :func:`read_store` and
:class:`History` (latest value per step), not the visualizer's display path,
so tests can compare what visdom shows against it.
"""

from __future__ import annotations

import csv
from typing import Any, TextIO

from snapshot_store.reader import read_store

from .runs import LocalRuns, S3Runs, locate

HEADER = ("run", "group", "tag", "step", "epoch", "wall_time", "value")


def export_csv(pickle_dir: str, out: TextIO, s3_client: Any = None) -> int:
    """Write all runs' scalars under ``pickle_dir`` to ``out``; returns the rows written.

    ``tag`` is ``group/name`` as a SummaryWriter would have called it; rows are
    sorted by run, group, name and step; ``run`` is the name in the run's
    metadata. S3 failures raise :class:`~visualizer.s3.S3ReadError`.
    """
    runs: LocalRuns | S3Runs = locate(pickle_dir, s3_client)
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
                        f"{group}/{name}",
                        step,
                        repr(float(epoch)),
                        repr(float(wall_time)),
                        repr(float(value)),
                    )
                )
                rows += 1
    return rows
