"""The display loop's bookkeeping: which page to look at, links to a run's CSV, redraw waits."""

from __future__ import annotations

import math
from html import escape as html_escape

from visualizer.panes.screen import Screen, download_link, sweep_links
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.download import CsvDownloads, export_command
from visualizer.visdom_client import VisdomClient


def _screen(pages: list[str]) -> Screen:
    client = VisdomClient(VisdomEndpoint())  # nothing is sent: no sync here
    return Screen(client, "runs", max_points=2000, on_page=pages.append)


def test_the_page_is_the_runs_env_then_the_comparison_announced_once_each() -> None:
    pages: list[str] = []
    screen = _screen(pages)
    screen.announce_page()
    assert screen.page_env is None and pages == [], "no run yet: nothing to look at"
    screen.add_run("a", "env_a", "/store/a")
    screen.announce_page()
    screen.announce_page()
    assert pages == ["env_a"]
    screen.add_run("b", "env_b", "/store/b")
    assert screen.page_env is None, "two runs and no comparison: no one page"
    screen.add_comparison("env_compare")
    screen.announce_page()
    assert pages == ["env_a", "env_compare"]
    assert screen.compare is not None and set(screen.compare.links) == {"a", "b"}


def test_without_the_download_server_the_link_is_the_export_command() -> None:
    html = download_link(None, "run1", "/store")
    assert html_escape(export_command("/store", "run1"), quote=False) in html


def test_with_the_download_server_the_run_is_offered_and_linked() -> None:
    downloads = CsvDownloads()
    downloads.start()
    try:
        html = download_link(downloads, "run1", "/store")
        assert downloads.stores == {"run1": "/store"}
        assert downloads.url("run1") in html
    finally:
        downloads.stop()


def test_nothing_held_back_means_no_redraw_wait() -> None:
    screen = _screen([])
    screen.add_run("a", "env_a", "/store/a")
    assert screen.redraw_wait() == math.inf


def test_the_sweep_without_the_download_server_is_two_export_commands() -> None:
    html = sweep_links(None, "/runs")
    assert html_escape(export_command("/runs", "all-runs"), quote=False) in html
    assert "python -m visualizer export --pickle-dir /runs --kind runs &gt; runs-table.csv" in html


def test_with_the_download_server_the_sweep_is_offered_and_linked() -> None:
    with CsvDownloads() as downloads:
        html = sweep_links(downloads, "/runs")
        assert downloads.root == "/runs"
        assert f"127.0.0.1:{downloads.port}/all/points.csv" in html and "download all runs" in html
        assert "/all/runs.csv" in html and "download the runs table" in html
        screen = Screen(VisdomClient(VisdomEndpoint()), "/runs", max_points=10, downloads=downloads)
        assert screen.index.exports is not None and "/all/runs.csv" in screen.index.exports


def test_with_a_snapshot_served_the_comparison_links_the_sweep_as_one_file() -> None:
    with CsvDownloads() as downloads:
        screen = Screen(VisdomClient(VisdomEndpoint()), "/runs", max_points=10, downloads=downloads)
        screen.add_comparison("runs_compare")
        assert screen.compare is not None and screen.compare.exports is None, "none served"
        downloads.render_file = lambda source: b""
        screen.add_comparison("runs_compare")
        assert screen.compare is not None and screen.compare.exports is not None
        assert (
            "/one-file/all.html" in screen.compare.exports
            and "as one file" in screen.compare.exports
        )
