"""Each run's CSV from the visualizer's loopback server: the same bytes as `visualizer export`."""

from __future__ import annotations

import io
import urllib.error
import urllib.request

import pytest

from snapshot_store import Recorder
from tests.visualizer.conftest import following, wait_until
from visualizer.download import CsvDownloads
from visualizer.export import export_csv

pytestmark = pytest.mark.integration  # starts an HTTP server


def test_the_options_pane_links_to_the_runs_csv_which_matches_export(
    tmp_path, visdom_server, reader, run_name
):
    store = tmp_path / "a run" / "pickle"
    with Recorder(store, options={"lr": 0.1}, flush_interval=0.05) as rec:
        for step in range(30):
            rec.log({"loss": 1 / (step + 1)}, step=step)
            rec.log({"accuracy": step / 30}, step=step, group="val")
    with (
        CsvDownloads() as downloads,
        following(store, visdom_server.endpoint, env=run_name, downloads=downloads),
    ):
        url = downloads.url("a run")
        assert url.endswith("/runs/a%20run.csv")
        wait_until(lambda: url in reader.windows(run_name)["options"]["content"])
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("text/csv")
            assert "attachment" in answer.headers["Content-Disposition"]
            body = answer.read().decode()
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(downloads.url("other"), timeout=10)
    expected = io.StringIO()
    export_csv(str(store), expected)
    assert body == expected.getvalue() and body.count("\n") == 61


def test_without_the_server_the_pane_shows_the_export_command(
    tmp_path, visdom_server, reader, run_name
):
    from visualizer.follower import Follower
    from visualizer.visdom_client import VisdomClient

    store = tmp_path / run_name / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    pane = reader.windows(run_name)["options"]["content"]
    assert f"python -m visualizer export --pickle-dir {store}" in pane
