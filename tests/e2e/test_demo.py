"""`make demo` as a new user meets it: the printed URL opened at once and left open to the end.

``scripts/demo.sh`` runs in a copy of the checkout (it writes ``data/`` and
``checkpoints/`` beside itself) with a short run; Chromium opens the URL it
prints as soon as it prints it, never reloads, and once training is done the page
shows every window the server has, each at the server's last step, with no
console error. A Ctrl-C then ends the demo with exit 0.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.fixtures.runs.checkout import checkout_copy
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.pages import ARTIFACTS, console_errors, differences, panes
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import EXIT_WAIT_S, wait_until
from visualizer.server.endpoint import VisdomEndpoint

# The demo's own knob: 3 epochs here; DEMO_EPOCHS=80 is the demo as `make demo` runs it.
DEMO_EPOCHS = int(os.environ.get("DEMO_EPOCHS", "3"))


@pytest.mark.timeout(300 + 15 * DEMO_EPOCHS)
def test_the_demo_page_opened_at_once_is_intact_at_the_end(tmp_path, chromium_driver):
    repo = checkout_copy(tmp_path / "repo")
    port = free_port()
    log = tmp_path / "demo.out"
    env = dict(os.environ, DEMO_EPOCHS=str(DEMO_EPOCHS), DEMO_PORT=str(port), PYTHON=sys.executable)
    with log.open("wb") as out:
        demo = subprocess.Popen(
            ["bash", "scripts/demo.sh"], cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C reaches its whole process group, as in a terminal
        )  # fmt: skip
    try:
        found = wait_until(
            lambda: re.search(r"Live plots:\s+(\S+)", log.read_text()), timeout=300, interval=0.2
        )
        url = found.group(1)
        assert url == f"http://127.0.0.1:{port}/env/demo"
        chromium_driver.get(url)  # at once, and never again
        wait_until(
            lambda: "They stay there until you press Ctrl-C" in log.read_text(),
            60 + 10 * DEMO_EPOCHS,
            1,
        )
        reader = VisdomReader(VisdomEndpoint("127.0.0.1", port))
        wrong: list[str] = []

        def intact() -> bool:
            wrong[:] = differences(chromium_driver, reader, "demo")
            return bool(panes(chromium_driver)) and not wrong

        try:
            wait_until(intact, timeout=30, interval=1)
        finally:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            chromium_driver.set_window_size(1280, 2400)
            chromium_driver.save_screenshot(str(ARTIFACTS / "demo_page_left_open.png"))
        assert not wrong, wrong
        assert "FINISHED" in chromium_driver.page_source
        assert console_errors(chromium_driver) == []
        os.killpg(demo.pid, signal.SIGINT)
        assert demo.wait(EXIT_WAIT_S) == 0, log.read_text()[-2000:]
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
