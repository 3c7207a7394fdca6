"""The summary's schema: a series' entry written and read back, a hostile entry read as far
as it is well-typed, and what a run's summary says of its end and duration."""

from __future__ import annotations

import math

import pytest

from snapshot_store.format.frames import ENDED_STATES, STATES
from snapshot_store.format.summary import NO_STATUS, RunSummary, SeriesStats


def test_an_entry_reads_back_as_written():
    stats = SeriesStats(count=3, step=2, last=0.5, min=0.25, max=1.0, time=1000.0)
    assert SeriesStats.read(stats.fields()) == stats


def test_nan_and_infinities_are_values_and_ints_read_as_floats():
    read = SeriesStats.read({"count": 2, "step": 1, "last": math.inf, "min": 1, "max": 2})
    assert read == SeriesStats(2, 1, math.inf, 1.0, 2.0, None)
    nan = SeriesStats.read({"count": 1, "step": 0, "last": math.nan})
    assert nan is not None and math.isnan(nan.last or 0.0)


@pytest.mark.parametrize(
    "entry",
    [None, [], "x", {}, {"count": -1}, {"count": True}, {"count": 1.0}, {"count": "1"}],
)
def test_an_entry_without_a_count_is_no_entry(entry):
    assert SeriesStats.read(entry) is None


def test_a_field_of_the_wrong_type_is_left_out_alone():
    read = SeriesStats.read({"count": 4, "step": True, "last": "x", "min": None, "max": 3})
    assert read == SeriesStats(4, None, None, None, 3.0, None)


def test_best_is_the_largest_or_the_smallest():
    stats = SeriesStats(3, 2, 0.5, 0.1, 0.9)
    assert (stats.best(higher_is_better=True), stats.best(higher_is_better=False)) == (0.9, 0.1)


def test_a_run_ends_in_an_ended_state_and_lasts_from_start_to_update():
    assert RunSummary("r").state == NO_STATUS and RunSummary("r").duration is None
    assert [RunSummary("r", state=s).ended for s in STATES] == [s in ENDED_STATES for s in STATES]
    assert RunSummary("r", started=10.0, updated=12.5).duration == 2.5
    assert RunSummary("r", started=10.0, updated=9.0).duration == 0.0  # clocks that disagree
