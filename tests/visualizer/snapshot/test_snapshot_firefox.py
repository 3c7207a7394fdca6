"""The snapshot file in a second engine: headless Firefox, from file:// while working
offline. The same file as the Chromium tests (test_snapshot_browser.py) opens with its
runs table and every window, decodes its columns with Firefox's ``DecompressionStream``,
zooms to every stored point of a range, and runs nothing of the store's markup."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_store import Recorder
from tests.fixtures.runs.snapshot_pages import (
    NAMES,
    PAYLOAD_KEY,
    PAYLOAD_NAME,
    PAYLOAD_VALUE,
    PLOTS_JS,
    ZOOM_JS,
    loss,
    payload_snapshot,
)
from tests.fixtures.servers.waiting import wait_until
from visualizer.__main__ import main

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("firefox")]

DRAWN_S = 60.0
ROWS_JS = "return Array.from(document.querySelectorAll('#runs tbody tr td:first-child'), td => td.textContent)"
TEXT_JS = "return document.querySelector(arguments[0]).textContent"
# The comparison's first window: the names of its band traces (two a group), once drawn.
BANDS_JS = """
const div = document.querySelector('#comparison .plots .js-plotly-plot');
return div && div._fullLayout ? div.data.filter(t => t.meta === 'band').map(t => t.name) : null;
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    return payload_snapshot(tmp_path_factory.mktemp("snapshot"))


def _plot(firefox, title: str) -> dict:
    return next(p for p in firefox.run(PLOTS_JS) if p["title"] == title)


def _open(firefox, page: Path, windows: int) -> None:
    assert firefox.offline
    firefox.open(page.as_uri())
    wait_until(lambda: len(firefox.run(PLOTS_JS)) == windows, DRAWN_S)


def test_the_file_opens_offline_in_firefox_and_zooms_to_every_stored_point(firefox, page):
    _open(firefox, page, 10)
    assert firefox.run(ROWS_JS) == NAMES
    # The overview is decimated; a zoom to 600 steps draws each of them and a neighbour.
    assert len(_plot(firefox, "train losses")["raw"][0]["x"]) <= 1000
    firefox.run(ZOOM_JS, "train losses", [4200, 4799])
    wanted = list(range(4199, 4801))
    wait_until(lambda: _plot(firefox, "train losses")["raw"][0]["x"] == wanted, DRAWN_S)
    # Nothing was fetched (every byte is in the file), and the network really is off.
    assert firefox.run("return performance.getEntriesByType('resource').length") == 0
    fetched = firefox.run("return fetch('http://127.0.0.1:9/').then(() => 'fetched', e => e.name)")
    assert fetched == "TypeError"


def test_store_markup_is_text_in_firefox_and_never_runs(firefox, page):
    _open(firefox, page, 10)
    assert firefox.run("return window.__pwned === undefined")
    assert firefox.run(TEXT_JS, "#runs tbody tr td") == PAYLOAD_NAME
    config = firefox.run(TEXT_JS, "#run-0 .kv")
    assert PAYLOAD_KEY in config and PAYLOAD_VALUE in config
    caption = firefox.run(TEXT_JS, "#run-0 figcaption")
    assert PAYLOAD_NAME in caption
    images = firefox.run("return Array.from(document.images, i => i.naturalWidth)")
    assert images == [8]  # the run's PNG, decoded from its data URL


def test_a_grouped_sweep_opens_in_firefox_with_a_band_per_group(firefox, tmp_path):
    for run in range(8):  # 2 learning rates x 4 seeds: a group a rate, its seeds a band
        options = {"lr": (0.1, 0.01)[run % 2], "seed": run // 2}
        with Recorder(tmp_path / f"r{run}" / "pickle", name=f"r{run}", options=options) as rec:
            for step in range(100):
                rec.log({"loss": loss(step, run)}, step=step)
    out = tmp_path / "sweep.html"
    args = ["snapshot", "--pickle-dir", str(tmp_path), "--group-by", "seed", "--out", str(out)]
    assert main(args) == 0
    firefox.open(out.as_uri())
    wait_until(lambda: firefox.run(BANDS_JS), DRAWN_S)
    assert firefox.run("return document.getElementById('count').textContent") == "8 of 8 runs"
    assert sorted(set(firefox.run(BANDS_JS))) == ["lr=0.01 (4 runs)", "lr=0.1 (4 runs)"]
