"""``--memory-budget`` counts the visdom server the viewer started beside the runs' series: runs
opened from the runs table leave the viewer and their envs leave visdom once past it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.net import free_port, http_get
from tests.fixtures.servers.processes import REPO, first_line, reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.layout import safe_id
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.tree_memory import tree, tree_rss

pytestmark = pytest.mark.integration  # starts the visualizer and its visdom

RUNS = 40
COMPARE = 2
OPEN_LINK = re.compile(r'href="(http://127\.0\.0\.1:\d+/open/)[^"]+"')


def test_runs_opened_past_a_budget_the_tree_exceeds_leave_visdom_once_drawn(tmp_path):
    """Issue 48: 200 opens grew visdom's server from 67 to 103 MB outside the budget. A budget
    below what its visdom holds at rest: each run opened leaves once drawn, and visdom keeps
    the compared runs' envs and a few, not one per run opened."""
    runs = tmp_path / "sweep"
    names = write_small_runs(runs, RUNS)
    log = tmp_path / "visualizer.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(runs),
             "--port", str(free_port()), "--compare", str(COMPARE), "--memory-budget", "20"],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        url = first_line(proc, log).strip().removeprefix("visdom: ")
        endpoint = VisdomEndpoint.parse(url.split("/env/")[0], None)
        reader = VisdomReader(endpoint)
        table = f"runs_{safe_id(str(runs))}"
        wait_until(lambda: OPEN_LINK.search(reader.windows(INDEX_ENV)[table]["content"]))
        found = OPEN_LINK.search(reader.windows(INDEX_ENV)[table]["content"])
        assert found is not None
        rss = tree_rss(proc.pid)
        assert rss is not None and rss > 20 << 20, "the viewer and its visdom, measured in /proc"
        for name in names:  # as the runs table's links open them, one after another
            status, _, _ = http_get(found.group(1) + name, {"Host": found.group(1).split("/")[2]})
            assert status == 303
        # The compared runs' envs, the index, the comparison, and the last opened at most.
        wait_until(lambda: len(reader.envs()) <= COMPARE + 4, timeout=60)
        below = tree(proc.pid)[1:]
        assert below, "the visdom server it started"
        proc.send_signal(signal.SIGTERM)  # the exit after many opens: 0, nothing left behind
        assert proc.wait(timeout=60) == ExitCode.OK, log.read_text()[-3000:]
        wait_until(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in below), timeout=30)
        assert "Traceback" not in log.read_text()
    finally:
        reap(proc)
