"""visdom's main env lists the followed runs: a link to each run's env, its state, its last update."""

from __future__ import annotations

import time

from snapshot_store import Recorder
from snapshot_store.reader import Update
from tests.fixtures.visdom_reading import following
from tests.fixtures.waiting import wait_until
from visualizer.follower import Follower
from visualizer.layout import safe_id
from visualizer.model.rundata import RunData
from visualizer.panes.index import INDEX_ENV, REFRESH_S, IndexDisplay, last_report
from visualizer.server.client import VisdomClient


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


def test_a_last_update_before_today_shows_its_date(visdom_server, reader, run_name):
    yesterday = time.time() - 86_400
    run = RunData(run_name)
    run.apply(Update(status={"state": "finished", "updated": yesterday}))
    index = IndexDisplay(VisdomClient(visdom_server.endpoint), run_name)
    assert index.sync([(run_name, run)])
    text = reader.windows(INDEX_ENV)[index.win]["content"]
    day = time.strftime("%Y-%m-%d ", time.localtime(yesterday))
    assert day in text, "a last update from another day shows its date"


def test_the_index_is_resent_only_when_it_changed(visdom_server, run_name, monkeypatch):
    index = IndexDisplay(VisdomClient(visdom_server.endpoint), run_name)
    run = RunData(run_name)
    run.apply(Update(status={"state": "finished", "updated": 100.0}))
    assert index.sync([(run_name, run)], now=1000.0)
    built = []
    html = index.html
    monkeypatch.setattr(index, "html", lambda *a: built.append(a) or html(*a))
    assert not index.sync([(run_name, run)], now=1000.0 + 60), "nothing changed"
    assert built == [], "a finished run with no news is not even looked at"
    run.apply(Update(status={"state": "failed", "updated": 200.0}))
    assert index.sync([(run_name, run)], now=1060.5), "news, and the last build is old"
    run.apply(Update(status={"state": "finished", "updated": 300.0}))
    assert not index.sync([(run_name, run)], now=1061.0), "rebuilt at most every REFRESH_S"
    assert index.sync([(run_name, run)], now=1060.5 + REFRESH_S)


def test_a_silent_running_run_is_flagged_without_news(visdom_server, reader, run_name):
    index = IndexDisplay(VisdomClient(visdom_server.endpoint), run_name)
    run = RunData(run_name)
    run.apply(Update(status={"state": "running", "updated": 1000.0, "heartbeat_seconds": 1.0}))
    assert index.sync([(run_name, run)], now=1000.0)
    assert "(silent)" not in reader.windows(INDEX_ENV)[index.win]["content"]
    assert index.sync([(run_name, run)], now=1060.0)
    assert "(silent)" in reader.windows(INDEX_ENV)[index.win]["content"]
