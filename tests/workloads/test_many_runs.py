"""workloads.many_runs: the generated runs' clock."""

import time

import pytest

from workloads.many_runs import RUN_GAP, STEP_SECONDS, run_starts


@pytest.mark.parametrize("runs", [1, 1_000, 1_440, 10_000, 100_000])
def test_every_generated_run_ends_in_the_past(runs):
    """A run ending in the future is a live one to a viewer and sorts above every new run:
    past 1,440 runs a minute apart from a day ago, 8,500 of 10,000 did."""
    now = 1_800_000_000.0
    first, gap = run_starts(runs, 1000, now)
    last_end = first + (runs - 1) * gap + 999 * STEP_SECONDS
    assert last_end < now - 30
    assert 0 < gap <= RUN_GAP


def test_a_thousand_runs_keep_their_minute_apart():
    """The 1,000-run rows of docs/benchmarks.md were measured on runs a minute apart."""
    assert run_starts(1_000, 1000, 0.0)[1] == RUN_GAP


def test_a_generated_run_starts_before_its_last_update(tmp_path):
    """Its status' start is on the generator's clock, as its points are: a table showed
    such runs started when they were written, a day after their last update."""
    from snapshot_store.format.frames import decode_document
    from workloads.many_runs import write_runs

    write_runs(tmp_path, 2, points=10, workers=1)
    for path in sorted(tmp_path.glob("*/pickle/status.pickle")):
        status = decode_document(path.read_bytes(), path)
        assert status["start_time"] < status["updated"] < time.time() - 3_600, status
