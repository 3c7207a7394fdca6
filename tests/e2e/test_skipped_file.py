"""A segment that can not be read for a while is read again once it can: the page ends whole.

The real visualizer (``run_visualizer_local.py``) follows a real store into the
real visdom server while one of its segments is unreadable (mode 000). Root
reads any file whatever its mode, so as root the visualizer runs without the
two capabilities that let it (:func:`~tests.fixtures.servers.disk.held_to_file_modes`).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from snapshot_store import Recorder
from tests.fixtures.servers.disk import held_to_file_modes
from tests.fixtures.servers.processes import reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_a_segment_unreadable_for_a_while_is_drawn_once_readable(tmp_path, visdom_server):
    reader = VisdomReader(visdom_server.endpoint)
    run = "unreadable-segment"
    store = tmp_path / run / "pickle"
    log_file = tmp_path / "visualizer.log"
    # segment_bytes=1: every flush closes the segment before it, one segment per 5 points.
    rec = Recorder(store, rank=0, flush_interval=0.05, segment_bytes=1, heartbeat_seconds=1.0)
    proc = None
    try:
        for first in (0, 5):
            for step in range(first, first + 5):
                rec.log({"loss": 1.0 / (step + 1)}, step=step)
            assert rec.flush()
        segment = sorted(store.glob("scalars-*.pickle"))[1]
        segment.chmod(0)
        with open(log_file, "w") as log:
            proc = subprocess.Popen(
                [*held_to_file_modes(), sys.executable, "run_visualizer_local.py",
                 "--pickle-dir", str(store), "--server", visdom_server.url, "--no-start-server",
                 "--poll-interval", "0.2"],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
        for step in range(10, 15):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
        assert rec.flush()

        def steps() -> list:
            return reader.traces(run, "train")["loss"][0]

        wait_until(lambda: steps() == [*range(5), *range(10, 15)], timeout=60)
        time.sleep(2.0)  # several polls while the segment stays unreadable
        segment.chmod(0o644)
        wait_until(lambda: steps() == list(range(15)), timeout=60)
    finally:
        for path in store.glob("scalars-*.pickle"):
            path.chmod(0o644)  # so that the test's files can be cleaned up
        rec.close()
        if proc is not None:
            reap(proc)
    text = log_file.read_text()
    assert text.count(f"skipped {segment} for now") == 1, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
