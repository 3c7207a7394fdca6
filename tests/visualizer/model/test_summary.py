"""A run's summary from its documents (or its series): every field checked, a bad one left out."""

from __future__ import annotations

import math

import pytest

from snapshot_store.format.summary import NO_STATUS, SeriesStats
from snapshot_store.read.store_reader import Update
from visualizer.model.rundata import RunData
from visualizer.model.summary import from_documents, from_run, higher_is_better


def _status(**fields):
    return {
        "state": "finished",
        "step": 99,
        "start_time": 1000.0,
        "updated": 1500.0,
        "last_log_time": 1400.0,
        "series": {"train/loss": {"count": 100, "step": 99, "last": 0.5, "min": 0.4, "max": 2.0}},
        **fields,
    }


def test_the_documents_give_state_steps_times_series_and_config():
    meta = {"options": {"lr": 0.1, "batch_size": 8}, "start_time": 900.0}
    summary = from_documents("r", meta, _status(hparams={"lr": 0.2, "seed": 1}))
    assert summary.summarized and summary.ended
    assert (summary.state, summary.step, summary.started, summary.updated) == (
        "finished",
        99,
        1000.0,
        1400.0,
    )
    assert summary.duration == 400.0
    assert summary.series == {"train/loss": SeriesStats(100, 99, 0.5, 0.4, 2.0)}
    assert summary.config == {"lr": 0.2, "batch_size": 8, "seed": 1}, "hparams win"


def test_an_option_logged_as_a_list_or_dict_stays_one_beside_its_flattened_hparams():
    meta = {"options": {"img_size": [640, 640], "hyp": {"lr0": 0.01}, "lr": 0.1}}
    hparams = {"img_size": "[640, 640]", "hyp.lr0": 0.01, "lr": 0.2}  # a W&B run's table row
    config = from_documents("r", meta, _status(hparams=hparams)).config
    assert config == {"img_size": [640, 640], "hyp": {"lr0": 0.01}, "hyp.lr0": 0.01, "lr": 0.2}


@pytest.mark.parametrize("stored", [None, "not a dict", ["a"]])
def test_the_summary_a_run_set_is_kept_as_set_and_a_malformed_one_left_out(stored):
    logged = {"best_model": "<b>resnet</b>", "best": {"epoch": 3}, "classes": ["cat", "dog"]}
    summary = from_documents("r", {}, _status(summary=logged))
    assert summary.values == logged and "summary" not in (summary.status or {})
    assert from_documents("r", {}, _status(summary=stored)).values == {}


def test_without_status_the_run_is_waiting_and_not_summarized():
    summary = from_documents("r", {"start_time": 5.0}, None)
    assert summary.state == NO_STATUS and not summary.ended and not summary.summarized
    assert summary.started == 5.0


@pytest.mark.parametrize(
    "series",
    [
        "not a dict",
        {"a": "nope"},
        {"a": {"count": -1}},
        {"a": {"count": True}},
        {5: {"count": 1}},
        {"a": {"count": 1, "last": "x", "min": [1], "max": None, "step": 1.5}},
    ],
)
def test_malformed_series_entries_are_left_out_or_blank(series):
    summary = from_documents("r", None, _status(series=series))
    for stats in summary.series.values():  # what is kept is typed
        assert isinstance(stats.count, int) and stats.count >= 0
        assert stats.last is None and stats.min is None and stats.step is None


@pytest.mark.parametrize("state", [None, 5, "\x1b[2J", ["running"]])
def test_a_strange_state_reads_unknown(state):
    assert from_documents("r", None, _status(state=state)).state == "unknown"


@pytest.mark.parametrize("when", [253402300800.0, 1e300, -1.0])  # year 10000 on, before 1970
def test_a_time_no_date_shows_is_left_out(when):
    summary = from_documents("r", None, _status(start_time=when, last_log_time=when))
    assert (summary.started, summary.updated) == (None, 1500.0)


def test_a_store_read_whole_gives_the_same_summary():
    run = RunData("r")
    run.apply(
        Update(
            scalars=[
                ("train", "loss", [0, 1, 2], [0.0] * 3, [10.0, 11.0, 12.0], [3.0, math.nan, 1.0])
            ],
            status={"state": "running", "start_time": 9.0},
        )
    )
    summary = from_run(run)
    assert summary.series["train/loss"] == SeriesStats(3, 2, 1.0, 1.0, 3.0), "NaN never min or max"
    assert summary.updated == pytest.approx(12.0)
    assert summary.summarized


@pytest.mark.parametrize(
    ("tag", "higher"),
    [
        ("val/acc", True),
        ("accuracy", True),
        ("eval/f1", True),
        ("train/loss", False),
        ("val/error", False),
        ("lr", False),
    ],
)
def test_best_is_the_largest_for_scores_and_the_smallest_for_losses(tag, higher):
    assert higher_is_better(tag) is higher
