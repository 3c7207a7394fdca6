"""Two visualizers on one port: the second refuses the first's visdom, unless told to share it.

The visdom a visualizer starts stops when that visualizer exits; a second one
drawing into it would be left with a dead URL. A visdom nobody owns (one started
with ``python -m visualizer.server``) is used as before: tests/visualizer/test_live.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import START_TIMEOUT_S, first_line, reap
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def visualizer(store: Path, port: int, *options: str) -> list[str]:
    """``python -m visualizer`` on ``store`` at ``port``."""
    return [sys.executable, "-m", "visualizer", "--pickle-dir", str(store), "--port", str(port),
            *options]  # fmt: skip


def test_a_second_visualizer_refuses_the_first_ones_visdom(tmp_path):
    store, port = tmp_path / "run" / "pickle", free_port()
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "state")}
    log = tmp_path / "first.log"
    with log.open("w") as stderr:
        first = subprocess.Popen(
            visualizer(store, port),
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
            text=True,
        )  # fmt: skip
    try:
        endpoint = VisdomEndpoint(port=port)
        assert first_line(first, log) == f"visdom: {endpoint.url}/env/run\n"

        second = subprocess.run(
            visualizer(store, port),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S,
        )  # fmt: skip
        assert second.returncode == ExitCode.UNAVAILABLE, second.stderr
        assert second.stdout == ""
        [line] = [ln for ln in second.stderr.splitlines() if " INFO " not in ln]
        assert line.endswith(
            f"ERROR visualizer: port {port} is served by the visdom of another visualizer "
            f"(pid {first.pid}), which stops it when it exits: give this one another port "
            "(--port N), or share that visdom on purpose with --no-start-server"
        ), second.stderr

        shared = subprocess.run(
            visualizer(store, port, "--no-start-server", "--once"),
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S,
        )  # fmt: skip
        assert shared.returncode == ExitCode.OK, shared.stderr
        assert shared.stdout == f"visdom: {endpoint.url}/env/run\n"

        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=START_TIMEOUT_S) == ExitCode.OK, log.read_text()
        assert not visdom_answers(endpoint)  # the first's visdom went with it
    finally:
        reap(first)
