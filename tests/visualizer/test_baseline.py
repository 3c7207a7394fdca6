"""The baseline run's choice: remembered per followed location, forgotten with ''."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.servers.alerting import TIMEOUT, stop, visualizer
from tests.fixtures.servers.pages import plots, screenshot
from tests.fixtures.servers.processes import first_line
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.baseline import BaselineChoice
from visualizer.panes.runs_table import INDEX_ENV
from visualizer.sources.runs import env_name


def test_a_baseline_is_remembered_per_location(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    BaselineChoice.for_source("s3://team/runs/").choose("resnet-yesterday")
    assert BaselineChoice.for_source("s3://team/runs/").name == "resnet-yesterday"
    assert BaselineChoice.for_source("/data/other-runs").name is None
    BaselineChoice.for_source("s3://team/runs/").choose("")
    assert BaselineChoice.for_source("s3://team/runs/").name is None


def test_an_unreadable_choice_is_told_and_none(tmp_path, caplog):
    path = tmp_path / "choice.json"
    path.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        assert BaselineChoice(path, "/runs").name is None
    assert "the baseline chosen before can not be read from" in caplog.text


@pytest.mark.integration
def test_a_run_slower_than_the_baseline_is_told_and_the_baseline_drawn_black_and_dashed(
    tmp_path, visdom_server, receiver, chromium_driver
):
    """A run 30% slower than the baseline raises ``slower``; the comparison draws the baseline
    black and dashed in every window; the runs table tells each value against it."""
    runs, state, log = tmp_path / "runs", tmp_path / "state", tmp_path / "visualizer.log"
    noise = np.random.default_rng(3).normal(1.0, 0.03, (2, 200))
    with Recorder(runs / "base" / "pickle", flush_interval=0.05) as base:
        for step in range(200):
            base.log({"samples_per_s": 1000 * noise[0, step], "loss": 2 / (1 + step)}, step=step)
    options = ("--alert-webhook", receiver.url, "--baseline", "base",
               "--alert-rule", "slower:train/samples_per_s")  # fmt: skip
    with Recorder(runs / "new" / "pickle", flush_interval=0.05) as new:
        proc = visualizer(runs, visdom_server.endpoint, state, log, *options)
        try:
            assert first_line(proc, log, TIMEOUT).startswith("visdom: ")
            for step in range(200):
                new.log({"samples_per_s": 700 * noise[1, step], "loss": 3 / (1 + step)}, step=step)
            new.flush()
            wait_until(receiver.alerts, TIMEOUT)
            reader = VisdomReader(visdom_server.endpoint)
            env = env_name("compare", runs.name, True)
            wait_until(lambda: len(_baseline_lines(reader, env)) >= 2, TIMEOUT)
            chromium_driver.get(f"{visdom_server.url}/env/{env}")
            WebDriverWait(chromium_driver, TIMEOUT).until(lambda d: len(plots(d)) >= 2)
            assert screenshot(chromium_driver, "comparison_baseline")
            # the loss is most logged, first: new's last 0.015 against the baseline's 0.01
            table = wait_until(lambda: (t := _table(reader)) and "0.015 (+0.005)" in t and t)
            assert "train/loss (last +/- base)" in table and "base (baseline)" in table
            chromium_driver.get(f"{visdom_server.url}/env/{INDEX_ENV}")
            WebDriverWait(chromium_driver, TIMEOUT).until(lambda d: "(baseline)" in d.page_source)
            assert screenshot(chromium_driver, "runs_table_baseline")
        finally:
            stop(proc, log)
    ((_, alert),) = receiver.alerts()
    assert (alert["run"], alert["event"]) == ("new", "slower")
    assert "against the baseline's 99" in alert["content"] and "(28% worse)" in alert["content"]
    assert BaselineChoice.for_source(str(runs)).name is None  # the state dir is the test's


def _table(reader: VisdomReader) -> str:
    """The runs table's HTML, as the server holds it."""
    windows = reader.windows(INDEX_ENV).values()
    return "".join(
        w["content"] for w in windows if isinstance(w, dict) and isinstance(w.get("content"), str)
    )


def _baseline_lines(reader: VisdomReader, env: str) -> list[dict]:
    """The comparison's traces of the baseline run: each window's, black and dashed."""
    found = []
    for window in reader.windows(env).values():
        content = window.get("content") if isinstance(window, dict) else None
        for trace in content.get("data", []) if isinstance(content, dict) else []:
            if isinstance(trace, dict) and trace.get("name") == "base" and "line" in trace:
                found.append(trace["line"])
    return [line for line in found if line.get("dash") == "dash" and line["color"] == "#000000"]
