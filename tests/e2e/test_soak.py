"""The page left open: Chromium pages stay on a run's env while it trains, and end intact.

A run (:mod:`tests.e2e.soak_run`, every record kind) is followed by the visualizer
CLI, which starts its own visdom. Three pages open at different moments (before
the first point, halfway, after the end) and are never reloaded; the halfway one
changes the smoothing and the axes from the page. The run crosses the image
history, ``--max-points`` and a group appearing late. At the end every page shows
every window the server has, each plot at the last step, each image pane at the
last image, and the browser logged no error.

``SOAK_SECONDS`` sets the run's length: 45 s by default (``make test``), 30 minutes in
``make soak``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.pages import (
    ARTIFACTS,
    CONTROL_XPATH,
    ROOT,
    choose,
    console_errors,
    differences,
    panes,
    plots,
    type_into,
)
from tests.fixtures.servers.processes import reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.server.endpoint import VisdomEndpoint

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "45"))
ENV = "soak"
MAX_POINTS = 200
CHECK_EVERY_S = 10.0
SHOTS = 6  # screenshots of each open page over the run, kept in test-artifacts/


def _start_visualizer(store: Path, port: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(store),
               "--port", str(port), "--max-points", str(MAX_POINTS)]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _open_page(driver: Any, url: str) -> str:
    """Open ``url`` in a browser window of its own (the first in the driver's own); its handle.

    A window each, as pages a person keeps in view: a tab behind another is hidden, and
    Chromium throttles a hidden page's timers until it is shown again.
    """
    if driver.current_url not in ("data:,", "about:blank"):
        driver.switch_to.new_window("window")
    driver.get(url)
    return driver.current_window_handle


def _check_page(driver: Any, handle: str, reader: VisdomReader, last: dict) -> list[str]:
    """What is wrong with the page in tab ``handle``: against the server, and the run's end."""
    driver.switch_to.window(handle)
    wrong = differences(driver, reader, ENV)
    for plot in plots(driver):
        ends = {x for x, smoothed in zip(plot["x_last"], plot["smoothed"]) if not smoothed}
        # hparams' metrics are at step 0, as TensorBoard logs them.
        if (
            plot["title"] != "hparams"
            and plot["x_axis"]["title"] == "step"
            and ends != {last["step"]}
        ):
            wrong.append(f"plot {plot['title']!r} ends at {sorted(ends)}, not {last['step']}")
    for title, pane in panes(driver).items():
        if pane["slider"] is not None and pane["caption"] != f"{title} @ step {last['image']}":
            wrong.append(f"image pane {title!r} shows {pane['caption']!r} ({pane['slider']})")
    return wrong


def _control(driver: Any, name: str, tag: str) -> str:
    """What the controls pane shows for ``name``: a field's text, a select's choice."""
    element = driver.find_element(By.XPATH, CONTROL_XPATH.format(name=name, tag=tag))
    return (
        Select(element).first_selected_option.text
        if tag == "select"
        else element.get_attribute("value")
    )


def _change_the_view(driver: Any) -> None:
    """From the page, as a person would: smoothing, a time axis, log y, then back to steps.

    Each change is checked once the visualizer drew the pane again with what it uses.
    """
    for _attempt in range(3):  # a click while the pane is drawn again can miss the field
        type_into(driver, "smoothing", "0.9")
        time.sleep(2)
        if _control(driver, "smoothing", "input") == "0.9":
            break
    assert _control(driver, "smoothing", "input") == "0.9"
    for name, choice in (("x axis", "relative time"), ("y axis", "log"), ("x axis", "step")):
        choose(driver, name, choice)
        time.sleep(2)
    assert _control(driver, "y axis", "select") == "log"


@pytest.mark.timeout(SOAK_SECONDS + 420)  # the run itself, then starting and checking
def test_pages_left_open_for_a_whole_run_end_intact(tmp_path, chromium_driver):
    store = tmp_path / ENV / "pickle"
    port = free_port()
    endpoint = VisdomEndpoint("127.0.0.1", port)
    url = f"http://127.0.0.1:{port}/env/{ENV}"
    log = tmp_path / "visualizer.log"
    visualizer = _start_visualizer(store, port, log)
    run = None
    try:
        driver = chromium_driver
        run = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.soak_run", str(store), str(SOAK_SECONDS)], cwd=ROOT
        )
        # The printed URL, opened at once: the run has its store, not a point yet.
        wait_until(lambda: f"visdom: {url}" in log.read_text(), timeout=60, interval=0.2)
        reader = VisdomReader(endpoint)
        tabs = {"before": _open_page(driver, url)}
        (store.parent / "go").touch()
        started = time.monotonic()
        shown: dict[str, int] = {}  # panes a page has shown
        next_shot = 0.0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        while run.poll() is None:
            elapsed = time.monotonic() - started
            if "halfway" not in tabs and elapsed >= SOAK_SECONDS / 2:
                tabs["halfway"] = _open_page(driver, url)
                WebDriverWait(driver, 60).until(lambda d: plots(d))
                _change_the_view(driver)
            for name, handle in tabs.items():  # a page gone blank is seen as it happens
                driver.switch_to.window(handle)
                count = len(panes(driver))
                assert count or not shown.get(name), f"{name} page went blank at {elapsed:.0f} s"
                shown[name] = shown.get(name, 0) or count
                if elapsed >= next_shot:  # what a person glancing at the tab sees
                    driver.save_screenshot(str(ARTIFACTS / f"soak_{name}_at_{elapsed:04.0f}s.png"))
            if elapsed >= next_shot:
                next_shot += SOAK_SECONDS / SHOTS
            time.sleep(CHECK_EVERY_S if SOAK_SECONDS > 120 else 2)
        assert run.returncode == 0
        last = json.loads((store.parent / "soak.json").read_text())
        tabs["after"] = _open_page(driver, url)
        wrong: dict[str, list[str]] = {}
        # The visualizer's last pass reaching every page, and a page left open for long
        # working through what it was sent.
        deadline = time.monotonic() + (60 if SOAK_SECONDS <= 120 else 180)
        while time.monotonic() < deadline:
            wrong = {n: _check_page(driver, h, reader, last) for n, h in tabs.items()}
            if not any(wrong.values()):
                break
            time.sleep(1)
        errors = {}
        for name, handle in tabs.items():
            driver.switch_to.window(handle)
            driver.set_window_size(1280, 2400)  # the whole page, every pane
            driver.save_screenshot(str(ARTIFACTS / f"soak_{name}_page.png"))
            errors[name] = console_errors(driver)
        assert not any(wrong.values()), wrong
        assert not any(errors.values()), errors
    finally:
        for proc in (run, visualizer):
            if proc is not None:
                reap(proc)
