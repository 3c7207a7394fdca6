"""``python -m bench snapshot`` on tiny sizes: every measure is taken and every row made;
the TensorBoard size it reports is the size torch's SummaryWriter writes."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_snapshot import TAGS, Sizes, measure_one, measure_sweep, rows, tensorboard_bytes
from tests.fixtures.servers.visdom import need_chromium

TINY = Sizes(points=3_000, sweep=110, compared=3, sweep_points=20, zoom_range=100, rounds=1,
             zooms=1)  # fmt: skip


def test_the_tensorboard_size_is_what_summary_writer_writes(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    steps = np.arange(0, 300, dtype=np.int64)  # varints of 0, 1 and 2 bytes
    with SummaryWriter(str(tmp_path / "tb")) as writer:
        for step in steps:
            for tag in TAGS:
                writer.add_scalar(tag, 0.5 + step, int(step), walltime=1.7e9 + step)
    written = sum(f.stat().st_size for f in (tmp_path / "tb").iterdir())
    assert tensorboard_bytes(TAGS, steps, tmp_path) == written


@pytest.mark.integration
def test_the_suite_measures_and_makes_every_row_on_tiny_sizes(tmp_path):
    need_chromium()
    one = measure_one(tmp_path / "one", TINY, float32=True)
    sweep = measure_sweep(tmp_path / "sweep", TINY)
    assert len(one["first-plot"]) == 1 and len(one["zoom"]) == 1
    assert 0 < one["first-plot"][0] <= one["drawn"][0]
    assert sweep["compared"] == 3 and sweep["csv"] > 0 and sweep["tensorboard"] > 0
    table = rows(one, one, sweep, TINY)
    assert len(table) == 8 and all(row["ours"] for row in table)
    assert "3 of 110 runs" in table[-1]["benchmark"]
