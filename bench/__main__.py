"""Run the benchmarks and print one table: ours beside the reference, measured in the same run.

    python -m bench            # all
    python -m bench store      # only bench/bench_store.py
    python -m bench loop       # a tiny MLP's training loop: step time and CPU of each writer
    python -m bench viewer     # the page in Chromium: first draw, 10M-point ingest, idle
    python -m bench zoom       # a 1M-point run zoomed to 1,000 steps in Chromium, every point drawn
    python -m bench gpu        # logging in a fast CUDA loop ("skipped: no CUDA" without one)
    python -m bench wandb      # wandb.log beside W&B offline
    python -m bench many       # 1,000 to 100,000 runs: start, memory, idle CPU, exit; TensorBoard beside
    python -m bench many_s3    # 10,000 runs in S3 (SeaweedFS) and 10 live: requests, a live point, a new run
    python -m bench api        # runs as data: 10,000 and 100,000 runs listed, a 1M-point history, Parquet
    python -m bench alerts     # alert rules on labelled curves: label to webhook, false alerts
    python -m bench snapshot   # one file to send: a 1M-point run and 100 of 10,000 runs, size and draw

These machines are noisy: compare the ratios, not the absolute times.
Each suite's table is also written into docs/benchmarks.md (bench/tools/doc_tables.py).
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path

from bench.tools.doc_tables import COLUMNS, PAGE, MarkerError, check_markers, write_table

SUITES = (
    "store", "loop", "memory", "transfer", "trainer", "visualizer", "viewer", "zoom",
    "integrations", "wandb", "gpu", "many", "many_s3", "api", "alerts", "snapshot",
)  # fmt: skip


def print_table(rows: list[dict]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(row.get(col, "")) for col in COLUMNS] for row in rows]
    widths = [max(len(col), *(len(c[i]) for c in cells)) for i, col in enumerate(COLUMNS)]
    line = "  ".join(col.ljust(w) for col, w in zip(COLUMNS, widths, strict=True))
    print(line)
    print("-" * len(line))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))


def main(argv: list[str], page: Path = PAGE) -> int:
    """Run the named suites (all by default), each table written into docs/benchmarks.md;
    exit 0 even if a target is missed."""
    logging.basicConfig(level=logging.WARNING)
    names = argv or list(SUITES)
    unknown = [name for name in names if name not in SUITES]
    if unknown:
        print(
            f"unknown benchmark suite {unknown[0]!r}; choose from {', '.join(SUITES)}",
            file=sys.stderr,
        )
        return 2
    try:  # before any suite runs: a page that can not take the tables wastes no hour
        check_markers(page, names)
    except MarkerError as err:
        print(err, file=sys.stderr)
        return 2
    rows: list[dict] = []
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"running {name} ...", file=sys.stderr, flush=True)
        suite_rows = module.run()
        write_table(name, suite_rows, page)  # at once: a later suite's crash keeps this one
        rows.extend(suite_rows)
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
