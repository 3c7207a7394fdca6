"""The curve rules in the viewer: points judged as they arrive, once; an ended run forgotten."""

from __future__ import annotations

import numpy as np

from snapshot_store.alert_rules.language import parse_rule
from tests.fixtures.curves import START, faulty
from visualizer.alerts.curves import CurveWatch
from visualizer.model.rundata import RunData
from visualizer.model.series import Series

LOSS = ("train", "loss")


def _run(name: str) -> RunData:
    run = RunData(name)
    run.status = {"state": "running", "updated": START, "step": 0}
    run.series[LOSS] = Series()
    return run


def _add(run: RunData, steps: np.ndarray, values: np.ndarray) -> None:
    run.series[LOSS].extend(steps.tolist(), values.tolist(), (START + steps).tolist())


def test_a_run_is_judged_from_its_points_as_they_arrive_and_told_once():
    curve = next(c for c in faulty() if c.name == "spikes")
    watch, run, found = CurveWatch([parse_rule("spike:train/loss")]), _run("a"), []
    for start in range(0, len(curve.values), 100):
        _add(run, curve.steps[start : start + 100], curve.values[start : start + 100])
        found += watch.findings(run, START)
    assert [(f.event, f.key) for f in found] == [("spike", "spike:train/loss")]
    assert "has train/loss spiking at step 7500: " in found[0].detail
    assert watch.findings(run, START) == []


def test_an_ended_run_is_judged_once_more_then_never_again():
    curve = next(c for c in faulty() if c.name == "spikes")
    watch, run = CurveWatch([parse_rule("spike:train/loss")]), _run("a")
    _add(run, curve.steps[:1000], curve.values[:1000])
    assert watch.findings(run, START) == []
    _add(run, curve.steps[1000:], curve.values[1000:])  # the spike, read with the run's end
    run.status = {**(run.status or {}), "state": "finished"}
    assert [f.event for f in watch.findings(run, START)] == ["spike"]
    _add(run, curve.steps[-1:] + 5, np.array([1e6]))  # a later spike is not looked at
    assert watch.findings(run, START) == [] and not watch._judges
