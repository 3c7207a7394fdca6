"""Run the benchmarks and print one table: ours beside the reference, measured in the same run.

    python -m bench            # all
    python -m bench store      # only bench/bench_store.py
    python -m bench loop       # a tiny MLP's training loop: step time and CPU of each writer
    python -m bench viewer     # the page in Chromium: first draw, 10M-point ingest, idle
    python -m bench zoom       # a 1M-point run zoomed to 1,000 steps in Chromium, every point drawn
    python -m bench gpu        # logging in a fast CUDA loop ("skipped: no CUDA" without one)
    python -m bench wandb      # wandb.log beside W&B offline

These machines are noisy: compare the ratios, not the absolute times.
"""

from __future__ import annotations

import importlib
import logging
import sys

SUITES = (
    "store", "loop", "memory", "transfer", "trainer", "visualizer", "viewer", "zoom",
    "integrations", "wandb", "gpu",
)  # fmt: skip
COLUMNS = ("benchmark", "ours", "reference", "ratio", "target", "met")


def print_table(rows: list[dict]) -> None:
    """Print rows as an aligned text table."""
    cells = [[str(row.get(col, "")) for col in COLUMNS] for row in rows]
    widths = [max(len(col), *(len(c[i]) for c in cells)) for i, col in enumerate(COLUMNS)]
    line = "  ".join(col.ljust(w) for col, w in zip(COLUMNS, widths, strict=True))
    print(line)
    print("-" * len(line))
    for c in cells:
        print("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)))


def main(argv: list[str]) -> int:
    """Run the named suites (all by default); exit 0 even if a target is missed."""
    logging.basicConfig(level=logging.WARNING)
    rows: list[dict] = []
    for name in argv or SUITES:
        if name not in SUITES:
            print(
                f"unknown benchmark suite {name!r}; choose from {', '.join(SUITES)}",
                file=sys.stderr,
            )
            return 2
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.extend(module.run())
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
