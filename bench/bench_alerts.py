"""Alert rules on labelled curves: how long after the labelled step each rule's alert reaches a
webhook, and how many alerts the healthy runs raise (target 0), beside a fixed threshold.

The curves are tests/fixtures/curves.py's (healthy: noise, warm-up, cosine and step
schedules, a warm restart, an accuracy, a throughput; faulty: each kind once). Each
is replayed through the one evaluator 25 points at a time, as a viewer's pass reads
them; a finding goes out through the viewer's delivery (:class:`AlertSender`) to a
webhook receiver on the loopback, and the row gives the steps from the label to the
point the run had reached, and the milliseconds from the finding to the POST's
arrival. The reference is what a person can write today: a fixed threshold per
series (``train/loss>1.5``, ``val/acc<0.5``, ``samples_per_s<800``) judged on the
last value after each batch.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from snapshot_store.alert_rules.language import Threshold, parse_rule
from snapshot_store.alerting.alert import Alert
from snapshot_store.alerting.delivery import AlertSender
from tests.fixtures.curves import (
    BATCH,
    EVERY,
    Curve,
    default_rule,
    faulty,
    healthy,
    replay,
    rules_for,
)
from tests.fixtures.servers.alerting import Receiver
from tests.fixtures.servers.net import serving
from visualizer.alerts.rules import AlertMemory

THRESHOLDS = {
    "train/loss": "train/loss>1.5",
    "val/acc": "val/acc<0.5",
    "samples_per_s": "samples_per_s<800",
}


def _threshold_step(curve: Curve) -> int | None:
    """The step a fixed threshold on ``curve`` fires at (its last value after each batch)."""
    rule = parse_rule(THRESHOLDS[curve.tag])
    assert isinstance(rule, Threshold)
    for stop in range(BATCH, len(curve.values) + BATCH, BATCH):
        last = min(stop, len(curve.values)) - 1
        if curve.stalls and curve.label is not None and curve.steps[last] > curve.label:
            return None  # a stalled run logs nothing more for a threshold to see
        if rule.holds(float(curve.values[last])):
            return int(curve.steps[last])
    return None


def _delivered(sender: AlertSender, receiver: Receiver, run: str, detail: str) -> float:
    """Seconds from handing an alert to the sender to its arrival at the receiver."""
    before = len(receiver.alerts())
    start = time.time()
    sender.send(
        Alert(run, detail.split(":")[0], detail, "http://127.0.0.1/", f"{run}:{start}", start)
    )
    while len(receiver.alerts()) == before:
        time.sleep(0.001)  # a bench may poll: the figure is the arrival
    return receiver.alerts()[-1][0] - start


def _faulty_rows(sender: AlertSender, receiver: Receiver) -> list[dict]:
    rows = []
    for curve in faulty():
        assert curve.kind is not None and curve.label is not None
        fired = replay(curve, [default_rule(curve.kind, curve.tag)])
        threshold = _threshold_step(curve)
        if fired:
            finding, step = fired[0]
            ms = 1000 * _delivered(sender, receiver, curve.name, finding.detail)
            ours = f"{step - curve.label} steps ({(step - curve.label) // EVERY} points), webhook +{ms:.0f} ms"
        else:
            ours, step = "never", None
        if threshold is None:
            reference = "never"
        elif threshold < curve.label:
            reference = f"{curve.label - threshold} steps before the label (a false alert)"
        else:
            reference = f"{threshold - curve.label} steps"
        rows.append({
            "benchmark": f"alerts: {curve.name} ({default_rule(curve.kind, curve.tag)}), label to webhook",
            "ours": ours,
            "reference": f"{THRESHOLDS[curve.tag]}: {reference}",
            "target": f"<= {curve.within} steps",
            "met": step is not None and 0 <= step - curve.label <= curve.within,
        })  # fmt: skip
    return rows


def _healthy_row() -> dict:
    curves = healthy()
    ours = sum(len(replay(curve, rules_for(curve))) for curve in curves)
    reference = sum(_threshold_step(curve) is not None for curve in curves)
    return {
        "benchmark": f"alerts: false alerts on {len(curves)} healthy runs, every kind's defaults",
        "ours": ours,
        "reference": f"{reference} (fixed thresholds)",
        "target": "0",
        "met": ours == 0,
    }


def _judge_rate() -> dict:
    """Points judged per second by the five series kinds together (a running run's cost)."""
    curve = healthy()[0]
    rules = [default_rule(k, curve.tag) for k in ("diverging", "plateau", "spike")]
    times = []
    for _ in range(3):
        start = time.perf_counter()
        replay(curve, rules)
        times.append(time.perf_counter() - start)
    rate = len(curve.values) / statistics.median(times)
    return {
        "benchmark": "alerts: points judged a second (diverging, plateau, spike; 25 a batch)",
        "ours": f"{rate:,.0f}",
        "target": ">= 10,000",
        "met": rate >= 10_000,
    }


def run() -> list[dict]:
    """The suite's rows (see the module)."""
    receiver = Receiver()
    with (
        tempfile.TemporaryDirectory(prefix="bench-alerts-") as tmp,
        serving(receiver.handler) as server,
    ):
        receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        sender = AlertSender(AlertMemory(Path(tmp) / "sent.json", "bench").delivered)
        sender.add_webhook(receiver.url)
        try:
            rows = _faulty_rows(sender, receiver)
        finally:
            sender.close(5.0)
            receiver.closed.set()
    return [*rows, _healthy_row(), _judge_rate()]
