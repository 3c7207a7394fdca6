"""Live plots for ``--remote False``: the visualizer follows the run from a child process.

The trainer does not import the visualizer (it runs on laptops without torch,
and its server and follower have no business in the training process): it
starts ``python -m visualizer`` on the run's store, as a user would, and stops
it when training ends.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 15.0  # the visualizer's last pass, then its visdom server's own grace period
READY_TIMEOUT_S = 60.0  # a short run can end before the child has drawn anything


class LiveView:
    """A ``python -m visualizer`` child following one store; :meth:`stop` ends it."""

    def __init__(self, store_dir: Path, server: str, port: int, env: str, log_path: Path) -> None:
        self.log_path = log_path
        command = [
            sys.executable,
            "-m",
            "visualizer",
            "--pickle-dir",
            str(store_dir),
            "--server",
            server,
            "--port",
            str(port),
            "--env",
            env,
            "--parent-pid",
            str(os.getpid()),
        ]
        child_env = dict(os.environ)
        # The visualizer must import from where this process imports (a source checkout too).
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        with log_path.open("ab") as log_file:
            # Own process group: a Ctrl-C in the terminal reaches the trainer, which decides.
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env=child_env,
                process_group=0,
            )
        self._ready = threading.Event()  # the child printed its URL: it has drawn the run once
        self._reader = threading.Thread(target=self._announce, name="live-view", daemon=True)
        self._reader.start()

    def _announce(self) -> None:
        """Log the URL the visualizer prints, and say so if it ends early."""
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith("visdom: "):
                log.info("live plots at %s", line.removeprefix("visdom: "))
                self._ready.set()
        code = self._proc.wait()
        if code not in (0, -signal.SIGTERM):
            log.warning(
                "the live visualizer exited with status %d; training goes on without it "
                "(its log: %s)",
                code,
                self.log_path,
            )

    def stop(self) -> None:
        """Ask the visualizer to draw the last points and exit; kill it if it does not.

        A child still starting would die of SIGTERM before its first drawing, so it
        gets until it has drawn the run once (or has exited, or a timeout).
        """
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ready.wait(0.1) and self._proc.poll() is None:
            if time.monotonic() > deadline:
                log.warning(
                    "the live visualizer drew nothing within %.0f s; stopping it (its log: %s)",
                    READY_TIMEOUT_S,
                    self.log_path,
                )
                break
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.warning(
                    "the live visualizer did not stop within %.0f s; killed", STOP_TIMEOUT_S
                )
                self._proc.kill()
                self._proc.wait()
        self._reader.join(1.0)
