"""The run summary in status.pickle: per-series count, last, min and max across batches,
NaN, both batch layouts, steps beyond int64, the series cap, hparams, a resumed run, and
a real recorder's round trip."""

from __future__ import annotations

import logging
import math

import pytest

from snapshot_store import Recorder, read_store
from snapshot_store.format import frames as fmt
from snapshot_store.format.summary import MAX_SUMMARY_SERIES
from snapshot_store.write.scalar_columns import ScalarColumns
from snapshot_store.write.summary import SummaryKeeper

NAN, INF = math.nan, math.inf


def converted(records: list[tuple]) -> list:
    """``(group, name, step, value)`` records as the writer thread's converted columns."""
    queued = []
    for group, name, step, value in records:
        queued.extend((group, name, step, 0.0, 1000.0 + step, value))
    return ScalarColumns().convert(queued)[0]


def summary_of(*batches: list[tuple]) -> dict:
    summary = SummaryKeeper()
    for records in batches:
        summary.add(converted(records))
    return summary.fields()


def entry(count, step, last, lo, hi) -> dict:
    return {"count": count, "step": step, "last": last, "min": lo, "max": hi, "time": 1000.0 + step}


def test_counts_last_min_and_max_run_across_batches():
    first = [("train", "loss", s, v) for s, v in ((0, 3.0), (1, 1.0), (2, 2.0))]
    second = [("train", "loss", 3, 5.0), ("train", "loss", 4, 4.0)]
    assert summary_of(first, second) == {"series": {"train/loss": entry(5, 4, 4.0, 1.0, 5.0)}}


def test_last_and_step_follow_the_logging_order_not_the_largest_step():
    # W&B's summary: the last value logged, even at an earlier step (a resumed epoch).
    fields = summary_of([("", "acc", 10, 0.5)], [("", "acc", 3, 0.7)])
    assert fields["series"]["acc"] == entry(2, 3, 0.7, 0.5, 0.7)


@pytest.mark.parametrize("layout", ["periodic", "irregular"])
def test_both_batch_layouts_give_the_same_summary(layout):
    records = [(g, n, s, float(s * 10 + i)) for s in range(4) for i, (g, n) in enumerate(
        [("train", "loss"), ("val", "acc"), ("", "lr")])]  # fmt: skip
    if layout == "irregular":  # a series logged twice in a row breaks the period
        records.insert(1, ("train", "loss", 0, -1.0))
    fields = summary_of(records)["series"]
    low = -1.0 if layout == "irregular" else 0.0
    count = 5 if layout == "irregular" else 4
    assert fields == {
        "train/loss": entry(count, 3, 30.0, low, 30.0),
        "val/acc": entry(4, 3, 31.0, 1.0, 31.0),
        "lr": entry(4, 3, 32.0, 2.0, 32.0),
    }
    assert list(fields) == ["train/loss", "val/acc", "lr"]  # first appearance


def test_nan_is_last_when_logged_last_and_never_a_bound():
    fields = summary_of(
        [("", "a", 0, NAN), ("", "a", 1, NAN)],  # a batch of NaN only: no bounds yet
        [("", "b", 0, NAN), ("", "b", 1, 2.0), ("", "b", 2, -INF)],  # NaN first, then numbers
    )["series"]
    assert fields["a"]["min"] is None and fields["a"]["max"] is None
    assert fields["a"]["count"] == 2 and math.isnan(fields["a"]["last"])
    assert fields["b"] == entry(3, 2, -INF, -INF, 2.0)
    later = SummaryKeeper()
    later.add(converted([("", "a", 0, NAN)]))
    later.add(converted([("", "a", 1, 1.5), ("", "a", 2, NAN)]))
    stats = later.fields()["series"]["a"]
    assert (stats["min"], stats["max"], stats["count"]) == (1.5, 1.5, 3)
    assert math.isnan(stats["last"])


@pytest.mark.parametrize("points", [8, 1200], ids=["min-max", "numpy"])  # either side of 1024
@pytest.mark.parametrize("first", [0, 2**70], ids=["int64", "beyond-int64"])
def test_bounds_skip_nan_in_small_and_big_batches(points, first):
    values = [NAN, -INF, *(float(i) for i in range(2, points // 2))]
    records = []
    for i, value in enumerate(values):
        records += [("", "a", first + i, value), ("", "b", first + i, NAN)]
    fields = summary_of(records)["series"]
    assert fields["a"] == entry(len(values), first + len(values) - 1, values[-1], -INF, values[-1])
    nan_only = fields["b"]
    assert (nan_only["min"], nan_only["max"], nan_only["count"]) == (None, None, len(values))
    assert type(nan_only["step"]) is int


def test_steps_beyond_int64_are_kept_as_ints():
    big = 2**70
    columns = converted([("", "x", big, 1.0), ("", "x", big + 1, -2.0)])
    assert type(columns[0][2]) is list  # the list layout, not packed
    assert summary_of([("", "x", big, 1.0), ("", "x", big + 1, -2.0)])["series"]["x"] == {
        "count": 2, "step": big + 1, "last": -2.0, "min": -2.0, "max": 1.0,
        "time": float(1000 + big + 1),
    }  # fmt: skip


def test_past_the_cap_series_are_counted_not_named():
    tags = [f"s{i:04d}" for i in range(MAX_SUMMARY_SERIES + 5)]
    summary = SummaryKeeper()
    summary.add(converted([("m", tag, 0, 1.0) for tag in tags]))
    summary.add(converted([("m", tag, 1, 2.0) for tag in reversed(tags)]))
    fields = summary.fields()
    assert list(fields["series"]) == [f"m/{tag}" for tag in tags[:MAX_SUMMARY_SERIES]]
    assert fields["series_left_out"] == 5
    assert fields["series"]["m/s0000"]["count"] == 2
    size = len(fmt.encode_document({**fields, "state": "running"}))
    assert size < 100_000, size  # rewritten every second: kept small


def test_the_last_hparams_record_is_kept():
    summary = SummaryKeeper()
    record = ("hparams", "hparams", 0, 1.0, {"hparams": {"lr": 0.1}, "metrics": {}})
    later = ("hparams", "run2", 0, 2.0, {"hparams": {"lr": 0.2, "opt": "sgd"}, "metrics": {}})
    summary.saw_records([record, ("text", "notes", 0, 1.0, {"text": "hi"})])
    assert summary.fields() == {"series": {}, "hparams": {"lr": 0.1}}
    summary.saw_records([later])
    assert summary.fields()["hparams"] == {"lr": 0.2, "opt": "sgd"}


def status_of(store) -> dict:
    return fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), store)


def test_a_recorder_round_trip_writes_what_was_logged(tmp_path):
    store = tmp_path / "exp" / "pickle"
    with Recorder(store, rank=0) as rec:
        for step in range(50):
            rec.log({"loss": 1.0 / (step + 1), "acc": step / 50}, step=step, wall_time=5.0 + step)
        rec.log_scalar("lr", NAN, step=50, group="", wall_time=60.0)
        rec.log_record("hparams", "hparams", {"hparams": {"lr": 0.1}, "metrics": {}}, step=0)
    status = status_of(store)
    series = status["series"]
    assert series["train/loss"] == {
        "count": 50, "step": 49, "last": 1 / 50, "min": 1 / 50, "max": 1.0, "time": 54.0
    }  # fmt: skip
    assert series["train/acc"] == {
        "count": 50, "step": 49, "last": 49 / 50, "min": 0.0, "max": 49 / 50, "time": 54.0
    }  # fmt: skip
    assert series["lr"]["min"] is None and math.isnan(series["lr"]["last"])
    assert status["hparams"] == {"lr": 0.1} and "series_left_out" not in status
    assert read_store(store)[2].status["series"].keys() == series.keys()  # readers keep it


def test_a_resumed_run_continues_the_earlier_summary(tmp_path):
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 2.0}, step=0, wall_time=1.0)
        rec.log({"loss": 0.5}, step=1, wall_time=2.0)
        rec.log_record("hparams", "hparams", {"hparams": {"lr": 0.1}, "metrics": {}}, step=0)
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 1.0}, step=2, wall_time=3.0)
        rec.log({"acc": 0.9}, step=2, wall_time=3.0)
    status = status_of(tmp_path)
    assert status["series"] == {
        "train/loss": {"count": 3, "step": 2, "last": 1.0, "min": 0.5, "max": 2.0, "time": 3.0},
        "train/acc": {"count": 1, "step": 2, "last": 0.9, "min": 0.9, "max": 0.9, "time": 3.0},
    }
    assert status["hparams"] == {"lr": 0.1}


def write_status(store, status: dict) -> None:
    store.mkdir(parents=True, exist_ok=True)
    (store / fmt.STATUS_FILE).write_bytes(fmt.encode_document(status))


def test_a_malformed_earlier_summary_is_ignored_with_one_warning(tmp_path, caplog):
    good = {"count": 2, "step": 1, "last": 1.0, "min": 1.0, "max": 3.0, "time": 5.0}
    write_status(tmp_path, {
        "state": "stopped",
        "series": {"train/loss": good, "bad": {"count": "2"}, "worse": [1], "x": {**good, "min": None}},
        "series_left_out": -3,
        "hparams": {"lr": [0.1]},
    })  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="snapshot_store"), Recorder(tmp_path, rank=0):
        pass
    warnings = [r for r in caplog.records if "run summary" in r.getMessage()]
    assert len(warnings) == 1 and "5 problems" in warnings[0].getMessage()
    status = status_of(tmp_path)
    assert status["series"] == {"train/loss": good} and "hparams" not in status


def test_an_earlier_session_of_an_older_writer_leaves_no_summary(tmp_path, caplog):
    # Its points are in the segments, not in any summary: counts would be wrong.
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 2.0}, step=0)
    status = status_of(tmp_path)
    del status["series"]
    write_status(tmp_path, status)
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 1.0}, step=1)
        rec.log_record("hparams", "hparams", {"hparams": {"lr": 0.1}, "metrics": {}}, step=0)
    status = status_of(tmp_path)
    assert "series" not in status and status["hparams"] == {"lr": 0.1}
    assert not caplog.records


def test_an_earlier_summary_beyond_the_cap_counts_the_rest_left_out(tmp_path):
    good = {"count": 1, "step": 0, "last": 1.0, "min": 1.0, "max": 1.0, "time": 5.0}
    series = {f"s{i}": good for i in range(MAX_SUMMARY_SERIES + 2)}
    write_status(tmp_path, {"state": "stopped", "series": series, "series_left_out": 3})
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"s0": 2.0}, step=1, group="")
    status = status_of(tmp_path)
    assert len(status["series"]) == MAX_SUMMARY_SERIES and status["series_left_out"] == 5
    assert status["series"]["s0"]["count"] == 2
