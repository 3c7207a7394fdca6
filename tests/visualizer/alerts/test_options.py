"""The alert options: a user's --alert-cmd plugin, and bad input refused at start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from snapshot_store.alerting.webhook import NTFY_EXAMPLE, WEBHOOK_VAR
from tests.fixtures.servers.alerting import POLL_S, ROOT, SECRET, TIMEOUT, stop, visualizer
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import first_line
from tests.fixtures.servers.waiting import wait_until
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers

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


def refused(
    tmp_path: Path, *options: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The visualizer with ``options`` (and ``env``) on an existing run: refused before visdom
    starts."""
    store = tmp_path / "r" / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    port = free_port()
    result = subprocess.run(
        [sys.executable, str(ROOT / "run_visualizer_local.py"), "--pickle-dir", str(store),
         "--port", str(port), *options],
        cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT),
             "XDG_STATE_HOME": str(tmp_path / "state")},
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
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "val/loss 2"],
         "argument --alert-rule: 'val/loss 2' is not a rule"),
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "plateau:val/loss:steps=x"],
         "argument --alert-rule: 'plateau:val/loss:steps=x': steps='x' is not a number"),
        (["--alert-cmd", "myalerts.notify", "--alert-rule", "slower:samples_per_s"],
         "--alert-rule 'slower:samples_per_s' judges against the baseline run: choose one with "
         "--baseline RUN"),
        (["--alert-rule", "val/loss>2"],
         "--alert-rule needs --alert-webhook URL (or $ALERT_WEBHOOK_URL) or --alert-cmd"),
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
def test_a_bad_webhook_in_the_environment_is_refused_naming_the_variable(tmp_path):
    bad = {WEBHOOK_VAR: f"hooks.example.com/T0/B0?token={SECRET}"}
    result = refused(tmp_path, "--alert-rule", "val/loss>2", env=bad)
    assert result.stderr.splitlines()[-1].endswith(
        f"error: ${WEBHOOK_VAR}: the value is not an http:// or https:// URL (e.g. a Slack or "
        "Discord webhook URL, or " + NTFY_EXAMPLE + ")"
    ), result.stderr
    assert SECRET not in result.stderr
