"""Live mode: the trainer (``--remote False``) runs ``python -m visualizer ... --parent-pid PID`` as a child.

The child is started here exactly as the trainer starts it, against the real
visdom server; it must announce ``visdom: <url of the run's env>`` once the
store is there, draw the run, and end by itself (after a last pass, status 0)
on SIGTERM or when its parent is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import START_TIMEOUT_S, first_line, reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXIT_AFTER_PARENT_S = 5  # the parent is checked once a second; then a last pass and exit


def live_command(store: Path, endpoint: VisdomEndpoint, env: str, parent_pid: int) -> list[str]:
    """The trainer's live-mode command line."""
    return [
        sys.executable, "-m", "visualizer",
        "--pickle-dir", str(store),
        "--server", endpoint.host,
        "--port", str(endpoint.port),
        "--env", env,
        "--parent-pid", str(parent_pid),
    ]  # fmt: skip


@contextmanager
def live_view(
    store: Path, endpoint: VisdomEndpoint, env: str, parent_pid: int, log: Path
) -> Iterator[subprocess.Popen[str]]:
    """The live view as a child process, its stderr in ``log``; killed if a test leaves it running."""
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            live_command(store, endpoint, env, parent_pid),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        yield proc
    finally:
        reap(proc)


@contextmanager
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for the trainer: it does nothing until killed."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def recorder(store: Path) -> Recorder:
    return Recorder(store, flush_interval=0.05)


def test_live_view_draws_the_run_and_ends_with_its_parent(
    tmp_path, visdom_server, reader, run_name
):
    store, log = tmp_path / run_name / "pickle", tmp_path / "visualizer.log"
    with (
        sleeper() as trainer,
        live_view(store, visdom_server.endpoint, run_name, trainer.pid, log) as view,
    ):
        with recorder(store) as rec:  # the store appears after the view started, as in training
            for step in range(40):
                rec.log({"loss": float(step)}, step=step)
            rec.flush()
            # Nothing was printed while the store was missing: the first line is the run's page.
            assert first_line(view, log) == f"visdom: {visdom_server.url}/env/{run_name}\n"
            wait_until(lambda: reader.traces(run_name, "train")["loss"][0] == list(range(40)))
        trainer.kill()
        trainer.wait()
        try:
            code = view.wait(timeout=EXIT_AFTER_PARENT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"still running {EXIT_AFTER_PARENT_S}s after its parent died; stderr:\n{log.read_text()}"
            ) from None
    assert code == ExitCode.OK, log.read_text()
    assert "FINISHED" in reader.windows(run_name)["status"]["content"]


def test_sigterm_draws_what_is_left_and_exits_0(tmp_path, visdom_server, reader, run_name):
    store, log = tmp_path / run_name / "pickle", tmp_path / "visualizer.log"
    with live_view(store, visdom_server.endpoint, run_name, os.getpid(), log) as view:
        with recorder(store) as rec:
            rec.log({"loss": 0.0}, step=0)
            rec.flush()
            assert first_line(view, log).startswith("visdom: ")
            wait_until(lambda: reader.has_window(run_name, "train"))
            for step in range(1, 100):
                rec.log({"loss": float(step)}, step=step)
        # What the trainer wrote just before stopping the view (its last points,
        # its final status) is drawn by the last pass even if no poll saw it yet.
        view.send_signal(signal.SIGTERM)
        code = view.wait(timeout=START_TIMEOUT_S)
    assert code == ExitCode.OK, log.read_text()
    assert reader.traces(run_name, "train")["loss"][0] == list(range(100))
    assert "FINISHED" in reader.windows(run_name)["status"]["content"]


def test_its_own_visdom_server_stops_with_it(tmp_path, run_name):
    """No visdom answers: the view starts one, and it is gone once the view has ended."""
    store, log = tmp_path / run_name / "pickle", tmp_path / "visualizer.log"
    endpoint = VisdomEndpoint(port=free_port())
    with recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    with live_view(store, endpoint, "live-env", os.getpid(), log) as view:
        assert first_line(view, log) == f"visdom: {endpoint.url}/env/live-env\n"
        own = VisdomReader(endpoint)
        wait_until(lambda: own.traces("live-env", "train")["loss"] == ([0], [1.0]))
        view.send_signal(signal.SIGTERM)
        assert view.wait(timeout=START_TIMEOUT_S) == ExitCode.OK, log.read_text()
    assert not visdom_answers(endpoint)
