"""Alerts, end to end: real stores being written, the real visualizer CLI, a real HTTP receiver.

The receiver is a loopback HTTP server in a thread of the test
(tests/fixtures/servers/alerting.py); the visualizer follows a directory of runs into
the session's visdom server, with its state dir (where sent alerts are
remembered) in the test's tmp dir.
"""

from __future__ import annotations

import base64
import html
import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from snapshot_store import Recorder
from snapshot_store.alerting.webhook import WEBHOOK_VAR
from tests.fixtures.servers.alerting import (
    POLL_S,
    SECRET,
    TIMEOUT,
    Receiver,
    once,
    stop,
    visualizer,
)
from tests.fixtures.servers.processes import first_line
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.sources.test_s3 import upload
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.runs import env_name

SILENT_MIN = 0.1  # --alert-silent-after: 6 s


@contextmanager
def logging_every(recorders: dict[str, Recorder], interval: float = 0.3) -> Iterator[None]:
    """Keep logging train/loss to ``recorders`` (the ones still open) so they never go silent."""
    done = threading.Event()

    def log() -> None:
        step = 1
        while not done.wait(interval):
            for rec in list(recorders.values()):
                if not rec.closed:
                    rec.log({"loss": 1.0 / step}, step=step)
            step += 1

    thread = threading.Thread(target=log, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(5)


def make_each_event(recs: dict[str, Recorder]) -> dict[str, float]:
    """Make each run's event happen, one after the other; when each happened, by run."""
    events = {}
    silent = recs.pop("silent")  # logs nothing more; its heartbeat goes on (a hung loop)
    time.sleep(1.0)  # the logging thread is done with it
    silent.log({"loss": 0.5}, step=1_000)
    events["silent"] = time.time() + SILENT_MIN * 60
    recs.pop("ends").close()
    events["ends"] = time.time()
    with pytest.raises(RuntimeError), recs.pop("fails"):
        raise RuntimeError("diverged")
    events["fails"] = time.time()
    with pytest.raises(KeyboardInterrupt), recs.pop("stops"):
        raise KeyboardInterrupt
    events["stops"] = time.time()
    recs["nan"].log({"grad_norm": math.nan}, step=3)
    events["nan"] = time.time()
    recs["rule"].log({"loss": 3.0}, step=5, group="val")
    events["rule"] = time.time()
    return events


def check_sent(receiver: Receiver, events: dict[str, float], endpoint: VisdomEndpoint) -> None:
    """One alert per run, of its kind, each within two polls of its event, saying what happened."""
    kinds = {"ends": "finished", "fails": "failed", "stops": "stopped",
             "nan": "non-finite", "rule": "rule", "silent": "silent"}  # fmt: skip
    sent = receiver.alerts()
    assert sorted((a["run"], a["event"]) for _, a in sent) == sorted(kinds.items())
    for arrived, alert in sent:
        run = alert["run"]
        assert arrived - events[run] <= 2 * POLL_S, (run, arrived - events[run])
        assert alert["url"] == endpoint.env_url(run)
        assert run in alert["content"] and alert["url"] in alert["content"]
        # Slack reads text (its &<> escaped), Discord content
        assert html.unescape(alert["text"]) == alert["content"]
    [(_, nan)], [(_, rule)] = receiver.of("nan"), receiver.of("rule")
    assert "train/grad_norm = nan at step 3" in nan["content"]
    assert "val/loss = 3 at step 5" in rule["content"] and "val/loss>2.5" in rule["content"]


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_each_alert_kind_is_sent_once_in_two_polls_and_never_again_after_a_restart(
    tmp_path, visdom_server, receiver
):
    runs, state, log = tmp_path / "runs", tmp_path / "state", tmp_path / "visualizer.log"
    names = ("ends", "fails", "stops", "nan", "rule", "silent")
    recs = {name: Recorder(runs / name / "pickle", flush_interval=0.05) for name in names}
    opened = list(recs.values())
    options = ("--alert-webhook", receiver.url, "--alert-rule", "val/loss>2.5",
               "--alert-silent-after", str(SILENT_MIN))  # fmt: skip
    try:
        with logging_every(recs):
            proc = visualizer(runs, visdom_server.endpoint, state, log, *options)
            try:
                assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
                wait_until(lambda: "alerts to http://127.0.0.1:" in log.read_text(), TIMEOUT)
                time.sleep(2 * POLL_S)  # every run seen running
                events = make_each_event(recs)
                wait_until(lambda: len(receiver.alerts()) >= len(names), 30)
                time.sleep(2 * POLL_S)  # room for a repeat, were there one
            finally:
                first_log = stop(proc, log)
            check_sent(receiver, events, visdom_server.endpoint)
            sent = receiver.alerts()
            # A restart remembers what was sent: nothing again, though every event still holds.
            proc = visualizer(runs, visdom_server.endpoint, state, log, *options)
            try:
                assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
                time.sleep(3 * POLL_S)
            finally:
                second_log = stop(proc, log)
            assert receiver.alerts() == sent
    finally:
        for rec in opened:
            rec.close()
    assert SECRET not in first_log + second_log
    assert list((state / "remote-train-monitor" / "alerts").glob("*.json"))


def sent_keys(state: Path, run: str) -> list[str] | None:
    """What the memory in ``state`` says was sent of ``run``; None while it does not know it."""
    for memory in (state / "remote-train-monitor" / "alerts").glob("*.json"):
        return json.loads(memory.read_text())["runs"].get(run)
    return None


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_each_session_of_a_resumed_run_alerts_its_end_once_across_restarts(
    tmp_path, visdom_server, receiver
):
    runs, state, log = tmp_path / "runs", tmp_path / "state", tmp_path / "visualizer.log"
    store = runs / "exp" / "pickle"
    rec = Recorder(store, flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    proc = visualizer(runs, visdom_server.endpoint, state, log, "--alert-webhook", receiver.url)
    try:
        try:
            assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
            wait_until(lambda: sent_keys(state, "exp") is not None, TIMEOUT)  # seen running
            rec.close()
            wait_until(lambda: len(receiver.of("exp")) == 1, 30)
            with Recorder(store, flush_interval=0.05) as rec:  # resumed: a second session
                rec.log({"loss": 0.5}, step=1)
            wait_until(lambda: len(receiver.of("exp")) == 2, 30)
        finally:
            stop(proc, log)
    finally:
        rec.close()
    assert [a["event"] for _, a in receiver.of("exp")] == ["finished", "finished"]
    assert len(sent_keys(state, "exp") or []) == 2  # one key per session
    once(runs, visdom_server.endpoint, state, log, "--alert-webhook", receiver.url)
    assert len(receiver.alerts()) == 2  # a restart sends neither again


@pytest.mark.integration
def test_a_run_that_ended_before_alerts_watched_it_is_history_not_news(
    tmp_path, visdom_server, receiver
):
    """Pointing a new visualizer at yesterday's sweep sends nothing; its runs are remembered."""
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    for name in ("old-1", "old-2"):
        with Recorder(runs / name / "pickle") as rec:
            rec.log({"loss": math.nan}, step=0)
    once(runs, visdom_server.endpoint, tmp_path / "state", log, "--alert-webhook", receiver.url)
    assert receiver.alerts() == []
    assert (
        "2 runs had ended before alerts watched them: no alert ('old-1', 'old-2')"
        in log.read_text()
    )
    (memory,) = (tmp_path / "state" / "remote-train-monitor" / "alerts").glob("*.json")
    saved = json.loads(memory.read_text())
    assert saved["source"] == str(runs)
    finished, non_finite = saved["runs"]["old-1"]
    assert finished.startswith("finished@") and non_finite == "non-finite:train/loss"


@pytest.mark.integration
def test_a_webhook_from_the_environment_is_used_and_kept_off_the_command_line(
    tmp_path, visdom_server, receiver
):
    """$ALERT_WEBHOOK_URL stands for --alert-webhook: a secret other users' ps can not read.
    Its login is sent as Basic authentication, and shown nowhere."""
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    url = receiver.url.replace("http://", f"http://alerts:{SECRET}@")
    rec = Recorder(runs / "exp" / "pickle", flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    try:
        proc = visualizer(runs, visdom_server.endpoint, tmp_path / "state", log,
                          env={WEBHOOK_VAR: url})  # fmt: skip
        try:
            assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
            command_line = (Path("/proc") / str(proc.pid) / "cmdline").read_bytes()
            time.sleep(2 * POLL_S)  # the run seen running
            rec.log({"loss": math.nan}, step=1)
            rec.flush()
            wait_until(receiver.alerts, 30)
        finally:
            stop(proc, log)
    finally:
        rec.close()
    ((_, _, headers, alert),) = receiver.requests()
    assert alert["run"] == "exp" and alert["event"] == "non-finite"
    login = base64.b64encode(f"alerts:{SECRET}".encode()).decode()
    assert headers["Authorization"] == f"Basic {login}"
    assert SECRET.encode() not in command_line and SECRET not in log.read_text()


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_an_s3_run_is_alerted_once_and_remembered_outside_the_bucket(
    tmp_path, s3_bucket, visdom_server, receiver
):
    store, state, log = tmp_path / "exp1" / "pickle", tmp_path / "state", tmp_path / "vis.log"
    url = s3_bucket.uri("team/exp1/pickle")
    rec = Recorder(store, flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    upload(s3_bucket, store, "team/exp1/pickle/")
    try:
        proc = visualizer(url, visdom_server.endpoint, state, log,
                          "--alert-webhook", receiver.url)  # fmt: skip
        try:
            assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
            rec.close()
            upload(s3_bucket, store, "team/exp1/pickle/")  # as the transfer hook does
            wait_until(receiver.alerts, 60)
        finally:
            stop(proc, log)
    finally:
        rec.close()
    once(url, visdom_server.endpoint, state, log, "--alert-webhook", receiver.url)
    ((_, alert),) = receiver.alerts()  # once: not again after the restart
    assert (alert["run"], alert["event"]) == ("exp1", "finished")
    assert all(key.startswith("team/exp1/pickle/") for key in s3_bucket.keys())
    (memory,) = (state / "remote-train-monitor" / "alerts").glob("*.json")
    assert json.loads(memory.read_text())["source"] == url + "/"  # as the visualizer names it


@pytest.mark.integration
def test_runs_not_followed_are_alerted_from_their_summaries(tmp_path, visdom_server, receiver):
    """Past --compare N only the compared runs are read whole: a rule and a non-finite value of
    the others come from the summary their status carries."""
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    last = {"best": 0.1, "high": 3.0, "inf": 5.0}  # val/loss: only "best" is compared
    names = {key: f"{tmp_path.name}-{key}" for key in last}
    recs = [Recorder(runs / names[key] / "pickle", flush_interval=0.05) for key in last]
    try:
        for rec, value in zip(recs, last.values(), strict=True):
            rec.log({"loss": value}, step=1, group="val")
        recs[2].log({"loss": math.inf}, step=2)
        options = ("--compare", "1", "--sort-by", "val/loss", "--alert-webhook", receiver.url,
                   "--alert-rule", "val/loss>2.5")  # fmt: skip
        proc = visualizer(runs, visdom_server.endpoint, tmp_path / "state", log, *options)
        try:
            wait_until(lambda: len(receiver.alerts()) >= 3, TIMEOUT)
        finally:
            stop(proc, log)
    finally:
        for rec in recs:
            rec.close()
    sent = sorted((a["run"], a["event"]) for _, a in receiver.alerts())
    assert sent == sorted([(names["high"], "rule"), (names["inf"], "rule"),
                           (names["inf"], "non-finite")])  # fmt: skip
    [(_, infinite)] = [(t, a) for t, a in receiver.of(names["inf"]) if a["event"] == "non-finite"]
    assert "train/loss = inf" in infinite["content"]
    # Only the best run is compared (read whole); no run's own page is drawn till it is opened.
    reader = VisdomReader(visdom_server.endpoint)
    assert set(reader.traces(env_name("compare", runs.name, True), "compare_val_loss")) == {
        names["best"]
    }
    assert not set(names.values()) & set(reader.envs())
