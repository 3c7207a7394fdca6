"""Runs too many to write for every measurement (100,000: some 11 GB and minutes), written once
by :func:`workloads.many_runs.write_runs` and kept for the next suite and the next run.

    $BENCH_KEPT_RUNS/runs-100000/run-00000/pickle/...   (default: <temp dir>/bench-kept-runs)

A scale counts as written once its marker is there; a half-written one is written again,
and so is one written by an older generator (the marker names the generator's version:
version 2's runs all end in the past, version 3's start on its clock too). Delete the folder to give the disk back.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from workloads.many_runs import write_runs

MARKER = ".complete-3"  # its number goes up when the generator writes other runs


def kept_root() -> Path:
    """Where kept runs are: ``$BENCH_KEPT_RUNS``, else ``<temp dir>/bench-kept-runs``."""
    return Path(
        os.environ.get("BENCH_KEPT_RUNS") or Path(tempfile.gettempdir()) / "bench-kept-runs"
    )


def kept_runs(runs: int) -> tuple[Path, float | None]:
    """The folder of ``runs`` generated runs, and the seconds writing them took now (None when
    they were already there)."""
    folder = kept_root() / f"runs-{runs}"
    if (folder / MARKER).is_file():
        return folder, None
    shutil.rmtree(folder, ignore_errors=True)
    began = time.perf_counter()
    write_runs(folder, runs)
    took = time.perf_counter() - began
    (folder / MARKER).write_text(f"{runs} runs, written in {took:.1f} s\n")
    return folder, took
