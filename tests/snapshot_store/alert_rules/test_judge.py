"""The one evaluator on labelled curves (tests/fixtures/curves.py): silent on the healthy runs
with every kind's defaults; on each faulty run, its kind fires within the stated steps."""

from __future__ import annotations

import numpy as np
import pytest

from snapshot_store.alert_rules.judge import RunJudge
from snapshot_store.alert_rules.language import parse_rule
from tests.fixtures.curves import Curve, default_rule, faulty, healthy, replay, rules_for


@pytest.mark.parametrize("curve", healthy(), ids=lambda c: c.name)
def test_no_rule_fires_on_a_healthy_run(curve: Curve):
    assert replay(curve, rules_for(curve)) == []


@pytest.mark.parametrize("curve", faulty(), ids=lambda c: c.name)
def test_each_fault_raises_its_kind_within_the_stated_steps_once(curve: Curve):
    assert curve.kind is not None and curve.label is not None
    found = replay(curve, rules_for(curve))
    ours = [(finding, step) for finding, step in found if finding.event == curve.kind]
    assert len(ours) == 1, found
    finding, step = ours[0]
    assert 0 <= step - curve.label <= curve.within, finding.detail
    assert finding.key == str(default_rule(curve.kind, curve.tag))


def test_a_finding_says_the_series_the_step_and_the_values():
    curve = next(c for c in faulty() if c.name == "diverges")
    ((finding, _),) = replay(curve, [default_rule("diverging", "train/loss")])
    assert finding.detail.startswith("has train/loss diverging at step 68")
    assert "(smoothed)" in finding.detail and "worse than its best 0.47" in finding.detail


def test_an_accuracy_is_judged_higher_is_better():
    rising = 0.1 + 0.8 * (1 - np.exp(-np.arange(2000) / 300))
    judge = RunJudge([parse_rule("diverging:val/acc"), parse_rule("diverging:val/loss")])
    steps = np.arange(2000)
    assert judge.points("val/acc", steps, rising) == []  # rising accuracy: fine
    assert [f.event for f in judge.points("val/loss", steps, rising)] == ["diverging"]


def test_stall_needs_the_heartbeat_to_go_on():
    judge = RunJudge([parse_rule("stall:minutes=1")])
    status = {"state": "running", "step": 10, "updated": 0.0, "last_log_time": 0.0}
    assert judge.status(status, 0.0) == []
    assert judge.status(status, 120.0) == []  # the heartbeat stopped too: silent's, not stall's
    [stall] = judge.status({**status, "updated": 119.0}, 120.0)
    assert (stall.event, stall.key) == ("stall", "stall:minutes=1")
    assert stall.detail == "has not moved from step 10 for 2.0 min while its heartbeat goes on"


def test_without_a_baseline_the_baseline_kinds_wait():
    judge = RunJudge([parse_rule("worse:val/acc"), parse_rule("slower:samples_per_s")])
    steps, values = np.arange(500), np.zeros(500)
    assert judge.points("val/acc", steps, values) == []
    assert judge.points("samples_per_s", steps, values) == []
