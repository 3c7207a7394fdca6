"""Alerts, end to end: real stores being written, the real visualizer CLI, a real HTTP receiver.

The receiver is a loopback HTTP server in a thread of the test; the visualizer
follows a directory of runs into the session's visdom server, with its state
dir (where sent alerts are remembered) in the test's tmp dir.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from snapshot_store import Recorder
from snapshot_store.exit_codes import ExitCode
from tests.fixtures.net import free_port
from tests.fixtures.processes import reap
from tests.visualizer.conftest import wait_until
from tests.visualizer.test_live import first_line
from tests.visualizer.test_s3_source import upload
from visualizer.endpoint import VisdomEndpoint
from visualizer.server import visdom_answers

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 1.0  # the visualizer's --poll-interval (its default)
SILENT_MIN = 0.1  # --alert-silent-after: 6 s
TIMEOUT = 60  # a bound for a start or an exit, not a target
SECRET = "s3cr3t-tok3n"


class Receiver:
    """A webhook receiver: every JSON body POSTed to it, with when it arrived."""

    def __init__(self) -> None:
        self.got: list[tuple[float, dict[str, Any]]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with receiver.lock:
                    receiver.got.append((time.time(), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?token={SECRET}"

    def alerts(self) -> list[tuple[float, dict[str, Any]]]:
        with self.lock:
            return list(self.got)

    def of(self, run: str) -> list[tuple[float, dict[str, Any]]]:
        return [(t, a) for t, a in self.alerts() if a["run"] == run]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()
    thread.join(5)


def visualizer(
    runs: Path | str,
    endpoint: VisdomEndpoint,
    state: Path,
    log: Path,
    *options: str,
    cwd: Path = ROOT,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """The visualizer following ``runs`` into the visdom at ``endpoint``, its stderr in ``log``."""
    env = {**os.environ, **(env or {}), "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)}
    with log.open("a") as stderr:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "run_visualizer_local.py"), "--pickle-dir", str(runs),
             "--port", str(endpoint.port), "--no-start-server", "--poll-interval", str(POLL_S),
             *options],
            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip


def stop(proc: subprocess.Popen[str], log: Path) -> str:
    """SIGTERM ``proc`` (how the trainer ends it); its log, once it exited 0."""
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=TIMEOUT) == ExitCode.OK, log.read_text()
    finally:
        reap(proc)
    return log.read_text()


@contextmanager
def logging_every(recorders: dict[str, Recorder], interval: float = 0.3) -> Iterator[None]:
    """Keep logging train/loss to ``recorders`` (the ones still open) so they never go silent."""
    done = threading.Event()

    def log() -> None:
        step = 1
        while not done.wait(interval):
            for rec in list(recorders.values()):
                if rec.enabled and not rec.closed:
                    rec.log({"loss": 1.0 / step}, step=step)
            step += 1

    thread = threading.Thread(target=log, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(5)


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_each_alert_kind_is_sent_once_in_two_polls_and_never_again_after_a_restart(
    tmp_path, visdom_server, receiver
):
    runs, state, log = tmp_path / "runs", tmp_path / "state", tmp_path / "visualizer.log"
    names = ("ends", "fails", "stops", "nan", "rule", "silent")
    recs = {name: Recorder(runs / name / "pickle", flush_interval=0.05) for name in names}
    silent = recs["silent"]
    options = ("--alert-webhook", receiver.url, "--alert-rule", "val/loss>2.5",
               "--alert-silent-after", str(SILENT_MIN))  # fmt: skip
    try:
        with logging_every(recs):
            proc = visualizer(runs, visdom_server.endpoint, state, log, *options)
            try:
                assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
                wait_until(lambda: "alerts to http://127.0.0.1:" in log.read_text(), TIMEOUT)
                time.sleep(2 * POLL_S)  # every run seen running
                events = {}
                silent = recs.pop(
                    "silent"
                )  # logs nothing more; its heartbeat goes on (a hung loop)
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
                wait_until(lambda: len(receiver.alerts()) >= len(names), 30)
                time.sleep(2 * POLL_S)  # room for a repeat, were there one
            finally:
                first_log = stop(proc, log)
            sent = receiver.alerts()
            kinds = {"ends": "finished", "fails": "failed", "stops": "stopped",
                     "nan": "non-finite", "rule": "rule", "silent": "silent"}  # fmt: skip
            assert sorted((a["run"], a["event"]) for _, a in sent) == sorted(kinds.items())
            for arrived, alert in sent:
                run = alert["run"]
                assert arrived - events[run] <= 2 * POLL_S, (run, arrived - events[run])
                assert alert["url"] == visdom_server.endpoint.env_url(run)
                assert run in alert["text"] and alert["url"] in alert["text"]
                assert alert["text"] == alert["content"]  # Slack reads text, Discord content
            [(_, nan)], [(_, rule)] = receiver.of("nan"), receiver.of("rule")
            assert "train/grad_norm = nan at step 3" in nan["text"]
            assert "val/loss = 3 at step 5" in rule["text"] and "val/loss>2.5" in rule["text"]

            # A restart remembers what was sent: nothing again, though every event still holds.
            proc = visualizer(runs, visdom_server.endpoint, state, log, *options)
            try:
                assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
                time.sleep(3 * POLL_S)
            finally:
                second_log = stop(proc, log)
            assert receiver.alerts() == sent
    finally:
        for rec in [*recs.values(), silent]:
            rec.close()
    assert SECRET not in first_log + second_log
    assert len([line for line in first_log.splitlines() if "alert " in line]) >= len(names)
    assert list((state / "remote-train-monitor" / "alerts").glob("*.json"))


PLUGIN = """
import json, os, pathlib

def notify(alert):
    out = pathlib.Path(os.environ["ALERTS_OUT"])
    tries = out.with_suffix(".tries")
    tries.write_text(tries.read_text() + "x" if tries.exists() else "x")
    if len(tries.read_text()) == 1:
        raise ConnectionError("the pager is down")  # the first call fails: retried
    with out.open("a") as f:
        f.write(json.dumps(alert) + "\\n")

def no_arguments():
    pass
"""


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_an_alert_cmd_plugin_is_called_with_the_alert_and_retried(tmp_path, visdom_server):
    work, runs, log = tmp_path / "work", tmp_path / "runs", tmp_path / "visualizer.log"
    work.mkdir()
    (work / "myalerts.py").write_text(PLUGIN)  # beside the command, as with --remote-transfer-cmd
    out = tmp_path / "alerts.jsonl"
    rec = Recorder(runs / "exp1" / "pickle", flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    try:
        proc = visualizer(runs, visdom_server.endpoint, tmp_path / "state", log,
                          "--alert-cmd", "myalerts.notify", cwd=work,
                          env={"ALERTS_OUT": str(out)})  # fmt: skip
        try:
            assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
            time.sleep(2 * POLL_S)
            rec.close()
            wait_until(out.exists, 30)
        finally:
            text = stop(proc, log)
    finally:
        rec.close()
    (alert,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert alert["run"] == "exp1" and alert["event"] == "finished"
    assert alert["url"] == visdom_server.endpoint.env_url("exp1")
    assert "ConnectionError: the pager is down" in text and "retrying in 1 s" in text
    assert "sent to myalerts.notify" in text


def refused(tmp_path: Path, *options: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The visualizer with ``options`` on an existing run: refused before visdom starts."""
    store = tmp_path / "r" / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    port = free_port()
    result = subprocess.run(
        [sys.executable, str(ROOT / "run_visualizer_local.py"), "--pickle-dir", str(store),
         "--port", str(port), *options],
        cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")},
    )  # fmt: skip
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not visdom_answers(VisdomEndpoint(port=port))
    return result


@pytest.mark.integration
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--alert-cmd", "nosuchmodule.notify"],
         "--alert-cmd 'nosuchmodule.notify': no module 'nosuchmodule' found in"),
        (["--alert-cmd", "myalerts.nosuch"], "has no attribute 'nosuch'"),
        (["--alert-cmd", "myalerts.no_arguments"],
         "can not be called with one alert: define it as def no_arguments(alert)"),
        (["--alert-cmd", "notdotted"], "is not a dotted path like 'myalerts.notify'"),
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "val/loss>two"],
         "argument --alert-rule: 'val/loss>two': 'two' is not a finite number"),
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "loss>2"],
         "argument --alert-rule: 'loss' is not GROUP/NAME"),
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "val/loss 2"],
         "argument --alert-rule: 'val/loss 2' is not a rule"),
        (["--alert-rule", "val/loss>2"], "--alert-rule needs --alert-webhook URL or --alert-cmd"),
        (["--alert-webhook", f"hooks.example.com/T0/B0?token={SECRET}"],
         "argument --alert-webhook: the value is not an http:// or https:// URL"),
        (["--alert-cmd", "myalerts.notify", "--alert-silent-after", "-1"],
         "'-1' is not a number of minutes"),
    ],
)  # fmt: skip
def test_bad_alert_options_are_refused_at_start(tmp_path, options, message):
    (tmp_path / "myalerts.py").write_text(PLUGIN)
    result = refused(tmp_path, *options, cwd=tmp_path)
    assert message in result.stderr.splitlines()[-1], result.stderr
    assert SECRET not in result.stderr


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_an_unreachable_webhook_is_logged_and_retried_and_following_goes_on(
    tmp_path, visdom_server
):
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    dead = f"http://user:pw@127.0.0.1:{free_port()}/services/T0/B0/{SECRET}"  # nothing listens
    rec = Recorder(runs / "exp1" / "pickle", flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    proc = visualizer(
        runs, visdom_server.endpoint, tmp_path / "state", log, "--alert-webhook", dead
    )
    try:
        assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
        time.sleep(2 * POLL_S)
        rec.close()
        wait_until(lambda: "attempt 2 of 5" in log.read_text(), 30)
        assert proc.poll() is None  # still following
        text = stop(proc, log)
    finally:
        reap(proc)
        rec.close()
    assert "alert 'finished' of run 'exp1' to http://user:***@127.0.0.1:" in text
    assert "failed (attempt 1 of 5: URLError" in text and "retrying in 2 s" in text
    assert SECRET not in text and ":pw@" not in text and "Traceback" not in text


@pytest.mark.integration
def test_a_run_that_ended_before_alerts_watched_it_is_history_not_news(
    tmp_path, visdom_server, receiver
):
    """Pointing a new visualizer at yesterday's sweep sends nothing; its runs are remembered."""
    runs, log = tmp_path / "runs", tmp_path / "visualizer.log"
    for name in ("old-1", "old-2"):
        with Recorder(runs / name / "pickle") as rec:
            rec.log({"loss": math.nan}, step=0)
    proc = visualizer(runs, visdom_server.endpoint, tmp_path / "state", log, "--once",
                      "--alert-webhook", receiver.url)  # fmt: skip
    try:
        assert proc.wait(timeout=TIMEOUT) == ExitCode.OK, log.read_text()
    finally:
        reap(proc)
    assert receiver.alerts() == []
    assert "run 'old-1' had ended before alerts watched it: no alert" in log.read_text()
    (memory,) = (tmp_path / "state" / "remote-train-monitor" / "alerts").glob("*.json")
    saved = json.loads(memory.read_text())
    assert saved["source"] == str(runs)
    finished, non_finite = saved["runs"]["old-1"]
    assert finished.startswith("finished@") and non_finite == "non-finite:train/loss"


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
    proc = visualizer(url, visdom_server.endpoint, state, log, "--once",
                      "--alert-webhook", receiver.url)  # fmt: skip
    try:
        assert proc.wait(timeout=TIMEOUT) == ExitCode.OK, log.read_text()
    finally:
        reap(proc)
    ((_, alert),) = receiver.alerts()  # once: not again after the restart
    assert (alert["run"], alert["event"]) == ("exp1", "finished")
    assert all(key.startswith("team/exp1/pickle/") for key in s3_bucket.keys())
    (memory,) = (state / "remote-train-monitor" / "alerts").glob("*.json")
    assert json.loads(memory.read_text())["source"] == url + "/"  # as the visualizer names it
