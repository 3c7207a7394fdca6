"""Alert rules judged on a run's writer thread: with no viewer running, each alert is sent once
through the viewer's delivery code and recorded in the run's status, so a viewer opened later,
or the run resumed, does not send it again; healthy curves send nothing but the run's end."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from snapshot_store import Recorder
from snapshot_store.alert_rules.language import BASELINE_KINDS, parse_rule
from snapshot_store.alerting.on_writer import AlertSettings, alert_settings
from snapshot_store.alerting.sent import SENT_FIELD, sent_alerts, sent_keys
from snapshot_store.format import frames as fmt
from tests.fixtures.curves import Curve, faulty, healthy, rules_for
from tests.fixtures.servers.alerting import once
from tests.fixtures.servers.waiting import wait_until

# The kinds a writer judges with their defaults: the baseline's are the viewer's.
WRITER_KINDS = ("diverging", "plateau", "spike")


class Collected:
    """An ``--alert-cmd`` plugin keeping each alert and the thread that delivered it."""

    def __init__(self) -> None:
        self.alerts: list[dict[str, Any]] = []
        self.threads: set[str] = set()

    def __call__(self, alert: dict[str, Any]) -> None:
        self.threads.add(threading.current_thread().name)
        self.alerts.append(alert)

    def events(self) -> list[str]:
        return [alert["event"] for alert in self.alerts]


def status_of(store: Path) -> dict[str, Any]:
    return fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), store)


def log_curve(rec: Recorder, curve: Curve) -> None:
    """The curve's points as a training loop logs them, with their wall times (ending now)."""
    group, _, name = curve.tag.rpartition("/")
    start = time.time() - float(curve.seconds[-1])
    for step, value, second in zip(curve.steps, curve.values, curve.seconds, strict=True):
        rec.log({name: float(value)}, step=int(step), group=group, wall_time=start + second)


def writer_rules(curve: Curve) -> list[str]:
    """The labelled set's rules for the curve (a rate is judged for a stall only), less the
    baseline's."""
    return [str(rule) for rule in rules_for(curve) if rule.kind not in BASELINE_KINDS]


def test_healthy_curves_send_nothing_but_their_end(tmp_path):
    for curve in healthy():
        collected = Collected()
        store = tmp_path / curve.name / "pickle"
        settings = alert_settings(writer_rules(curve), command=collected)
        with Recorder(store, alerts=settings, flush_interval=0.01) as rec:
            log_curve(rec, curve)
        assert collected.events() == ["finished"], (curve.name, collected.alerts)
        assert [r["event"] for r in sent_alerts(status_of(store))] == ["finished"]


@pytest.mark.parametrize(
    "curve", [c for c in faulty() if c.kind in WRITER_KINDS], ids=lambda c: c.name
)
def test_each_faulty_curve_fires_its_kind_once_within_its_steps(tmp_path, curve):
    collected = Collected()
    store = tmp_path / "run" / "pickle"
    with Recorder(store, alerts=alert_settings(writer_rules(curve), command=collected)) as rec:
        log_curve(rec, curve)
    fired = [a for a in collected.alerts if a["event"] == curve.kind]
    assert len(fired) == 1, collected.alerts
    step = int(re.search(r"at step (\d+)", fired[0]["detail"])[1])
    assert curve.label <= step <= curve.label + curve.within, fired[0]["detail"]
    assert collected.events()[-1] == "finished"
    assert not collected.threads & {threading.current_thread().name, "snapshot-writer"}


def test_a_stall_is_told_while_the_writer_beats_and_the_step_does_not_move(tmp_path):
    collected = Collected()
    rules = ["stall:minutes=0.02"]  # 1.2 s
    rec = Recorder(tmp_path / "run" / "pickle", alerts=alert_settings(rules, command=collected),
                   heartbeat_seconds=0.1)  # fmt: skip
    try:
        for step in range(20):
            rec.log({"loss": 1.0}, step=step)
        wait_until(lambda: "stall" in collected.events(), timeout=30)
        assert "has not moved from step 19" in collected.alerts[0]["detail"]
    finally:
        rec.close()


def test_a_viewer_opened_later_and_a_resumed_run_do_not_send_it_again(
    tmp_path, visdom_server, receiver
):
    """The rule fires from the training process; a viewer with the same rule and webhook, started
    while the run goes on, remembers it as sent; the run resumed sends only its new end."""
    curve = next(c for c in faulty() if c.name == "diverges")
    runs, store = tmp_path / "runs", tmp_path / "runs" / "diverges" / "pickle"
    settings = alert_settings([f"diverging:{curve.tag}"], webhook=receiver.url)
    rec = Recorder(store, alerts=settings)
    try:
        log_curve(rec, curve)
        wait_until(lambda: "diverging:train/loss" in sent_keys(status_of(store)))
        assert [a["event"] for _, a in receiver.of("diverges")] == ["diverging"]
        assert receiver.of("diverges")[0][1]["url"] == ""  # a writer knows no viewer's page
        log = once(runs, visdom_server.endpoint, tmp_path / "state", tmp_path / "viewer.log",
                   "--alert-webhook", receiver.url, "--alert-rule", "diverging:train/loss")  # fmt: skip
        assert "alert 'diverging' of run 'diverges': sent by its writer" in log
    finally:
        rec.close()
    assert [a["event"] for _, a in receiver.of("diverges")] == ["diverging", "finished"]
    with Recorder(store, alerts=settings) as rec:  # resumed: the same curve again
        log_curve(rec, curve)
    events = [a["event"] for _, a in receiver.of("diverges")]
    assert events == ["diverging", "finished", "finished"], "its second session's end only"
    assert len(status_of(store)[SENT_FIELD]) == 3


def test_an_alert_not_delivered_is_not_recorded_so_a_viewer_sends_it(tmp_path):
    def fails(alert: dict[str, Any]) -> None:
        raise ConnectionError("the receiver is down")

    settings = AlertSettings((parse_rule("loss>0.5"),), command=fails, close_timeout=0.5)
    store = tmp_path / "run" / "pickle"
    with Recorder(store, alerts=settings) as rec:
        rec.log({"loss": 1.0}, step=1)
    assert SENT_FIELD not in status_of(store)


@pytest.mark.parametrize(
    ("rules", "webhook", "said"),
    [
        (["slower:samples_per_s"], "http://127.0.0.1:9/h", "judges against a baseline run"),
        (["diverging:train/loss"], None, "need somewhere to send alerts"),
        (["diverging:train/loss"], "ftp://host/x", "is not an http:// or https:// URL"),
        (["diverging"], "http://127.0.0.1:9/h", "diverging needs a series' name"),
    ],
)
def test_settings_that_can_not_work_are_one_line_before_anything_is_written(
    tmp_path, rules, webhook, said
):
    with pytest.raises(ValueError, match=re.escape(said)) as err:
        alert_settings(rules, webhook=webhook)
    assert "\n" not in str(err.value)
    assert alert_settings([]) is None, "nothing asked for: no alerts"


def test_a_hostile_record_of_sent_alerts_is_skipped():
    good = {"event": "spike", "detail": "d", "key": "spike:x", "time": 1.0}
    hostile = [good, {"key": 3}, "text", {**good, "time": float("nan")}, {**good, "key": None}]
    assert sent_alerts({SENT_FIELD: hostile}) == [good]
    assert sent_alerts({SENT_FIELD: {"not": "a list"}}) == []
    assert sent_keys({SENT_FIELD: [good] * 2_000}) == {"spike:x"}
    assert np.isfinite(sent_alerts({SENT_FIELD: [good]})[0]["time"])
