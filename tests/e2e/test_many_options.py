"""Runs of 12,000 config keys each, followed with the real viewer and visdom: every pane
within its byte budget, and SIGTERM ends the viewer within 2 s (it took 13.5 s)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import REPO, first_line, reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer import layout
from visualizer.panes.hparams import PANE_CHARS
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.runs import env_name

pytestmark = pytest.mark.integration  # starts the visualizer and its visdom

RUNS, KEYS = 12, 12_000
STOP_S = 2.0  # the bound on a stop, whatever the panes hold


def _write(root: Path) -> None:
    for r in range(RUNS):
        options = {f"key_{i:05d}": f"value {r}-{i}" for i in range(KEYS)}
        with Recorder(root / f"run-{r:02d}" / "pickle", options=options) as rec:
            for step in range(3):
                rec.log({"loss": 1.0 / (step + 1 + r)}, step=step)


def test_runs_of_12000_config_keys_are_drawn_within_budget_and_stop_within_2_s(tmp_path):
    root = tmp_path / "sweep"
    _write(root)
    log = tmp_path / "visualizer.log"
    argv = ["-m", "visualizer", "--pickle-dir", str(root), "--port", str(free_port())]
    with log.open("w") as err:  # the child keeps its own copy of the file
        proc = subprocess.Popen([sys.executable, *argv], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=err, text=True)  # fmt: skip
    try:
        line = first_line(proc, log).strip()
        assert line.startswith("visdom: "), log.read_text()
        reader = VisdomReader(
            VisdomEndpoint.parse(line.removeprefix("visdom: ").split("/env/")[0], None)
        )
        env = env_name("run-00", None, True)
        wait_until(lambda: layout.OPTIONS_WIN in reader.windows(env), timeout=60)
        options = reader.windows(env)[layout.OPTIONS_WIN]["content"]
        assert len(options) < PANE_CHARS + 5_000 and "more options" in options  # was 4.4 MB
        compare = env_name("compare", root.name, True)
        wait_until(lambda: reader.windows(compare), timeout=60)
        biggest = max(len(str(w.get("content", ""))) for w in reader.windows(compare).values())
        assert biggest < 3 * PANE_CHARS  # the runs window was 4.1 MB
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == ExitCode.OK, log.read_text()[-3000:]
        took = time.monotonic() - began
        assert took <= STOP_S, f"{took:.2f} s: " + log.read_text()[-1500:]
    finally:
        reap(proc)
