"""The curve rules in the viewer: points judged as they arrive, once; an ended run forgotten."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from snapshot_store import Recorder
from snapshot_store.alert_rules.language import parse_rule
from tests.fixtures.curves import START, faulty
from tests.fixtures.runs import stall_job
from tests.fixtures.runs.ranks import LAUNCH_TIMEOUT
from tests.fixtures.runs.training import job, torchrun_cmd
from tests.fixtures.servers.alerting import TIMEOUT, once, stop, visualizer
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import first_line
from tests.fixtures.servers.waiting import wait_until
from visualizer.alerts.curves import CurveWatch
from visualizer.model.rundata import RunData
from visualizer.model.series import Series
from visualizer.server.endpoint import VisdomEndpoint

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


def _timed(name: str, seconds_per_step: np.ndarray, noise: float = 0.03) -> RunData:
    """A run logging its loss every 5 steps, each step taking ``seconds_per_step`` (jittered)."""
    run = _run(name)
    steps = np.arange(len(seconds_per_step)) * 5
    jitter = np.random.default_rng(len(name)).normal(1.0, noise, len(steps))
    times = START + np.cumsum(5 * seconds_per_step * jitter)
    run.series[LOSS].extend(steps.tolist(), np.ones(len(steps)).tolist(), times.tolist())
    return run


def test_slower_without_a_series_judges_the_runs_steps_per_second_against_the_baseline():
    """``slower`` alone: the run's own steps/s, from its most logged series, as the baseline's."""
    rule = parse_rule("slower")
    assert str(rule) == "slower:steps/s"
    baseline = _timed("base", np.full(2000, 0.1))
    watch = CurveWatch([rule], lambda: baseline)
    same = _timed("same-speed", np.full(2000, 0.1))
    assert watch.findings(same, START) == [], "as fast as the baseline: nothing"
    slow = np.where(np.arange(2000) < 1000, 0.1, 0.1 / 0.7)  # 30% fewer steps a second from 1000
    (found,) = watch.findings(_timed("slowed", slow), START)
    assert (found.event, found.key) == ("slower", "slower:steps/s")
    step = int(found.detail.split("at step ")[1].split(":")[0])
    assert 5000 <= step <= 5000 + 100 * 5, found.detail  # within 100 points of the slow-down
    assert "has steps/s slower than the baseline" in found.detail


@contextmanager
def _viewing(runs: Path, tmp_path: Path, endpoint: VisdomEndpoint, *options: str) -> Iterator[None]:
    """The visualizer following ``runs`` with ``options`` in the block (its state in
    ``tmp_path``), stopped at its end."""
    log = tmp_path / "visualizer.log"
    proc = visualizer(runs, endpoint, tmp_path / "state", log, *options)
    try:
        assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
        yield
    finally:
        stop(proc, log)


@pytest.mark.integration
def test_a_curve_rule_alerts_through_the_webhook_once_across_restarts(
    tmp_path, visdom_server, receiver
):
    runs, state, log = tmp_path / "runs", tmp_path / "state", tmp_path / "visualizer.log"
    options = ("--alert-webhook", receiver.url, "--alert-rule", "spike:train/loss")
    noise = np.random.default_rng(1).normal(1.0, 0.05, 200)
    with Recorder(runs / "spiky" / "pickle", flush_interval=0.05) as rec:
        for step, value in enumerate(noise):
            rec.log({"loss": float(value)}, step=step)
        rec.flush()
        with _viewing(runs, tmp_path, visdom_server.endpoint, *options):
            rec.log({"loss": 40.0}, step=200)
            rec.flush()
            wait_until(receiver.alerts, TIMEOUT)
    ((_, alert),) = receiver.alerts()
    assert (alert["run"], alert["event"]) == ("spiky", "spike")
    assert alert["content"].startswith("run 'spiky' has train/loss spiking at step 200: 40, ")
    once(runs, visdom_server.endpoint, state, log, *options)  # remembered: not sent again
    assert [a["event"] for _, a in receiver.alerts()] == ["spike", "finished"]


STALL_MIN = 0.1  # the stall rule's T: 6 s


@pytest.mark.integration
def test_a_rank_hung_in_a_torchrun_job_raises_stall_within_its_minutes(
    tmp_path, visdom_server, receiver
):
    """Rank 1 sleeps inside the loop; rank 0 waits in its all_reduce, its heartbeat going on:
    ``stall`` comes within T (and a bound for a loaded machine) of the hang."""
    runs, marker = tmp_path / "runs", tmp_path / "hung"
    store = runs / "ddp" / "pickle"
    script = Path(stall_job.__file__)
    port = str(free_port())
    cmd = torchrun_cmd("--nproc_per_node", "2", "--master_port", port, str(script), str(store),
                       str(marker))  # fmt: skip
    options = ("--alert-webhook", receiver.url, "--alert-rule", f"stall:minutes={STALL_MIN}")
    with job(cmd, tmp_path) as training:
        wait_until(lambda: marker.exists() or training.poll() is not None, LAUNCH_TIMEOUT)
        assert training.poll() is None, training.communicate()[1][-2000:]
        with _viewing(runs, tmp_path, visdom_server.endpoint, *options):
            wait_until(receiver.alerts, TIMEOUT)
    ((arrived, alert),) = receiver.alerts()
    assert (alert["run"], alert["event"]) == ("ddp", "stall")
    assert f"has not moved from step {stall_job.HANG_AT - 1} for " in alert["content"]
    hung = float(marker.read_text())
    # T after the hang, plus a bound (not a target) for a start and a pass on a loaded machine
    assert STALL_MIN * 60 <= arrived - hung <= STALL_MIN * 60 + TIMEOUT


@pytest.mark.integration
def test_among_many_runs_a_running_one_not_compared_is_judged_too(
    tmp_path, visdom_server, receiver
):
    """Past --compare N, the curve rules still judge every running run: it is read whole while
    it runs (its page is not drawn till opened)."""
    runs = tmp_path / "runs"
    for name, loss in (("best", 0.1), ("done", 0.5)):
        with Recorder(runs / name / "pickle", flush_interval=0.05) as rec:
            rec.log({"loss": loss}, step=1, group="val")
    options = ("--compare", "1", "--sort-by", "val/loss", "--alert-webhook", receiver.url,
               "--alert-rule", "spike:train/loss")  # fmt: skip
    noise = np.random.default_rng(2).normal(1.0, 0.05, 100)
    with Recorder(runs / "live" / "pickle", flush_interval=0.05) as rec:
        rec.log({"loss": 0.9}, step=0, group="val")  # worse than "best": not compared
        with _viewing(runs, tmp_path, visdom_server.endpoint, *options):
            for step, value in enumerate(noise):
                rec.log({"loss": float(value)}, step=step)
            rec.log({"loss": 30.0}, step=100)
            rec.flush()
            wait_until(receiver.alerts, TIMEOUT)
    ((_, alert),) = receiver.alerts()
    assert (alert["run"], alert["event"]) == ("live", "spike")
