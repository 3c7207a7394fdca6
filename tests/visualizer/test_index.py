"""visdom's main env lists the followed runs: a link to each run's env, its state, its last update."""

from __future__ import annotations

import time

from snapshot_store import Recorder
from tests.visualizer.conftest import following, wait_until
from visualizer.follower import Follower
from visualizer.index import INDEX_ENV, IndexDisplay, last_report
from visualizer.layout import safe_id
from visualizer.rundata import RunData
from visualizer.visdom_client import VisdomClient


def test_the_main_env_indexes_every_run_with_a_link_state_and_last_update(
    tmp_path, visdom_server, reader, run_name
):
    runs = tmp_path / run_name
    for name in ("a", "b"):
        with Recorder(runs / name / "pickle") as rec:  # closing it marks the run finished
            rec.log({"loss": 1.0}, step=0)
    Follower(str(runs), VisdomClient(visdom_server.endpoint)).run_once()
    pane = reader.windows(INDEX_ENV)[f"runs_{safe_id(str(runs))}"]
    text = pane["content"]
    for name in ("a", "b"):
        assert f'href="{visdom_server.url}/env/{name}"' in text
    assert text.count("finished") == 2
    assert f'href="{visdom_server.url}/env/{run_name}_compare"' in text
    assert time.strftime("%H:") in text, "the last update, as local time"


def test_the_index_follows_a_run_as_it_goes(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    win = f"runs_{safe_id(str(store))}"
    rec = Recorder(store, flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    with following(store, visdom_server.endpoint):
        wait_until(lambda: "running" in reader.windows(INDEX_ENV)[win]["content"])
        rec.close("failed")
        wait_until(lambda: "failed" in reader.windows(INDEX_ENV)[win]["content"])


def test_last_report_is_the_newest_point_or_status():
    run = RunData("r")
    assert last_report(run) is None
    run.status = {"state": "running", "updated": 100.0}
    assert last_report(run) == 100.0


def test_the_index_is_resent_only_when_it_changed(visdom_server, run_name):
    index = IndexDisplay(VisdomClient(visdom_server.endpoint), run_name)
    run = RunData(run_name)
    run.status = {"state": "finished", "updated": 100.0}
    assert index.sync([(run_name, run)], now=1000.0)
    assert not index.sync([(run_name, run)], now=1000.0 + 60), "nothing changed"
    run.status = {"state": "failed", "updated": 200.0}
    assert not index.sync([(run_name, run)], now=1060.5), "rebuilt at most every REFRESH_S"
    assert index.sync([(run_name, run)], now=1070.0)
