"""A sweep of 1,000 finished runs, as a user follows it: `run_visualizer_local.py --pickle-dir`,
the runs table in visdom's main env, the comparison page, a table link, and Ctrl-C's cousin
SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.small_runs import write_small_runs
from tests.fixtures.servers.net import free_port, http_get
from tests.fixtures.servers.processes import REPO, first_line, reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.layout import safe_id
from visualizer.panes.compare import DEFAULT_COMPARE
from visualizer.panes.runs_table import INDEX_ENV, PAGE_ROWS
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.runs import env_name

pytestmark = pytest.mark.integration  # starts the visualizer and its visdom

RUNS = 1_000
EXIT_TIMEOUT_S = 60  # a bound on waiting, not a speed expectation
OPEN_LINK = re.compile(r'href="(http://127\.0\.0\.1:\d+/open/[^"]+)"')


@pytest.fixture(scope="session")
def thousand_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,000 finished runs of 20 points, written by the store's own writer."""
    root = tmp_path_factory.mktemp("sweep")
    write_small_runs(root, RUNS)
    return root


@pytest.fixture
def visualizer(thousand_runs: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """The visualizer following the sweep with its own visdom; reaped whatever the test did."""
    log = tmp_path / "visualizer.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(thousand_runs),
             "--port", str(free_port())],
            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        yield proc, log
    finally:
        reap(proc)


def test_a_thousand_runs_are_a_table_a_comparison_and_links_that_open_a_run(
    thousand_runs, visualizer
):
    proc, log = visualizer
    line = first_line(proc, log).strip()
    assert line.startswith("visdom: http://127.0.0.1:"), log.read_text()
    url = line.removeprefix("visdom: ")
    endpoint = VisdomEndpoint.parse(url.split("/env/")[0], None)
    reader = VisdomReader(endpoint)
    table = f"runs_{safe_id(str(thousand_runs))}"

    def html() -> str:
        return reader.windows(INDEX_ENV)[table]["content"]

    # The URL comes with the first page, drawn before the runs are read ("reading 0 of 1,000").
    wait_until(lambda: f"{RUNS:,} runs" in html() and "reading" not in html(), timeout=60)
    assert html().count("<tr>") == PAGE_ROWS + 1, "a header and a page of rows"
    assert url.endswith(f"/env/{INDEX_ENV}"), "many runs: the page to look at is the runs table"
    compare = env_name("compare", thousand_runs.name, True)
    assert f'href="{endpoint.env_url(compare)}"' in html(), "the table links the comparison"
    wait_until(
        lambda: len(reader.traces(compare, "compare_train_loss")) == DEFAULT_COMPARE, timeout=60
    )

    link = OPEN_LINK.search(html())
    assert link is not None, "a run not compared links through the loopback server"
    status, _, location = http_get(link.group(1), {"Host": link.group(1).split("/")[2]})
    assert status == 303 and location is not None and location.startswith(endpoint.url)
    env = location.split("/env/")[1]
    assert reader.windows(env), "the run's page is drawn when the browser gets there"

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=EXIT_TIMEOUT_S) == ExitCode.OK, log.read_text()[-3000:]
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
    assert text.count("following run") == 0, "no line per run"
    reading = [line for line in text.splitlines() if "runs" in line and "read" in line]
    assert 1 <= len(reading) <= 5, text
