"""A run whose store folder may not be looked into (mode 000) among others: they are drawn,
it is told of once, and drawn once it opens.

The real visualizer (``run_visualizer_local.py``) follows a folder of runs into the
real visdom server; as root it runs without the capabilities that read any file
whatever its mode (:func:`~tests.fixtures.servers.disk.held_to_file_modes`).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from snapshot_store import Recorder
from tests.fixtures.servers.disk import held_to_file_modes
from tests.fixtures.servers.processes import reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_a_closed_run_folder_is_told_of_once_and_the_other_runs_go_on(tmp_path, visdom_server):
    reader = VisdomReader(visdom_server.endpoint)
    tag = uuid.uuid4().hex[:8]
    names = {"open": f"open-{tag}", "closed": f"closed-{tag}"}
    recs = {
        k: Recorder(tmp_path / n / "pickle", rank=0, flush_interval=0.05) for k, n in names.items()
    }
    closed = tmp_path / names["closed"] / "pickle"
    log_file = tmp_path / "visualizer.log"
    logged = dict.fromkeys(names, 0)
    proc = None

    def append(run: str, steps: int) -> None:
        for step in range(logged[run], steps):
            recs[run].log({"loss": float(step)}, step=step)
        logged[run] = steps
        assert recs[run].flush()

    def drawn(run: str, steps: int) -> bool:
        return reader.traces(names[run], "train")["loss"][0] == list(range(steps))

    def told() -> int:
        return log_file.read_text().count(f"can not read {closed} ")

    try:
        append("open", 5)
        append("closed", 5)
        closed.chmod(0)
        with open(log_file, "w") as log:
            proc = subprocess.Popen(
                [*held_to_file_modes(), sys.executable, "run_visualizer_local.py",
                 "--pickle-dir", str(tmp_path), "--server", visdom_server.url,
                 "--no-start-server", "--poll-interval", "0.2"],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        wait_until(lambda: drawn("open", 5), timeout=60)
        wait_until(told, timeout=30)
        append("closed", 10)  # its trainer goes on, and so does the open run's
        append("open", 10)
        wait_until(lambda: drawn("open", 10), timeout=30)
        closed.chmod(0o755)
        wait_until(lambda: drawn("closed", 10), timeout=30)
    except AssertionError as err:
        raise AssertionError(f"{err}\nthe visualizer's log:\n{log_file.read_text()}") from None
    finally:
        closed.chmod(0o755)  # so that the test's files can be cleaned up
        for rec in recs.values():
            rec.close()
        if proc is not None:
            reap(proc)
    text = log_file.read_text()
    assert told() == 1, text[-3000:]
    assert f"{closed} readable again" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
