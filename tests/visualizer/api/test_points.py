"""A run's points as numpy columns: every value in logged order, a row a step."""

from __future__ import annotations

import math

import numpy as np

from run_core.tags import key_of
from snapshot_store import Recorder
from snapshot_store.read.local_source import LocalSource
from visualizer.api.points import read_series, table


def _store(tmp_path, rows):
    store = tmp_path / "run" / "pickle"
    with Recorder(store, rank=0) as rec:
        for step, values in rows:
            for tag, value in values.items():
                group, name = key_of(tag)
                rec.log({name: value}, step=step, group=group)
    return LocalSource(store)


def test_two_values_at_one_step_are_both_read_in_logged_order(tmp_path):
    source = _store(tmp_path, [(0, {"loss": 3.0}), (1, {"loss": 2.0}), (1, {"loss": 1.5}),
                               (2, {"loss": 1.0})])  # fmt: skip
    (series,) = read_series(source)
    assert series.tag == "loss"
    assert series.steps.tolist() == [0, 1, 1, 2]
    assert series.values.tolist() == [3.0, 2.0, 1.5, 1.0]


def test_a_step_logged_below_the_last_replaces_from_there_as_history_does(tmp_path):
    source = _store(tmp_path, [(0, {"loss": 3.0}), (1, {"loss": 2.0}), (2, {"loss": 1.5}),
                               (1, {"loss": 2.5}), (2, {"loss": 1.0})])  # fmt: skip
    (series,) = read_series(source)
    assert series.steps.tolist() == [0, 1, 2]
    assert series.values.tolist() == [3.0, 2.5, 1.0]


def test_a_second_value_at_a_step_has_a_row_of_its_own(tmp_path):
    source = _store(tmp_path, [(0, {"epoch": 0.0, "loss": 2.0}), (1, {"epoch": 0.0, "loss": 1.0}),
                               (1, {"epoch": 1.0}), (2, {"epoch": 1.0})])  # fmt: skip
    rows = list(table(read_series(source)).rows())
    assert [row["_step"] for row in rows] == [0, 1, 1, 2]
    assert [row["epoch"] for row in rows] == [0.0, 0.0, 1.0, 1.0]
    assert [row.get("loss") for row in rows] == [2.0, 1.0, None, None]


def test_series_on_different_steps_share_one_row_a_step(tmp_path):
    source = _store(tmp_path, [(0, {"train/loss": 1.0}), (1, {"train/loss": 0.5}),
                               (1, {"val/loss": 0.7}), (3, {"val/loss": float("nan")})])  # fmt: skip
    rows = table(read_series(source))
    assert rows.steps.tolist() == [0, 1, 3]
    assert next(rows.rows()).keys() == {"_step", "train/loss", "_timestamp"}
    last = list(rows.rows())[-1]
    assert math.isnan(last["val/loss"]) and "train/loss" not in last  # a logged NaN is a value
    assert rows.having(["train/loss", "val/loss"]).steps.tolist() == [1]
    assert len(rows.having(["nothing"])) == 0
    assert not np.isnan(rows.timestamps).any()


def test_samples_are_evenly_spaced_with_the_first_and_last(tmp_path):
    source = _store(tmp_path, [(step, {"loss": float(step)}) for step in range(100)])
    sampled = table(read_series(source)).sampled(5)
    assert sampled.steps.tolist() == [0, 25, 50, 74, 99]
    assert table(read_series(source)).sampled(500).steps.tolist() == list(range(100))
