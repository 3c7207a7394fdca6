"""A snapshot file in headless Chromium, from file:// with the network off and no server:
the runs table, every stored point of a zoomed range, the same smoothing and decimation as
the viewer's Python, and store text shown as text, never run."""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.runs.snapshot_pages import (
    NAMES,
    PAYLOAD_KEY,
    PAYLOAD_NAME,
    PAYLOAD_SERIES,
    PAYLOAD_VALUE,
    PLOTS_JS,
    POINTS,
    START,
    ZOOM_JS,
    loss,
    payload_snapshot,
)
from tests.fixtures.servers.pages import BROWSER_WAIT_S, console_errors, screenshot
from visualizer.__main__ import main
from visualizer.model.decimate import decimate_indices
from visualizer.model.series import Series
from visualizer.model.smoothing import Smoother
from visualizer.model.traces import local_ms
from visualizer.snapshot.columns import packed, unpacked

AXIS_JS = """
return document.querySelector('#run-0 .js-plotly-plot')._fullLayout.xaxis.type;
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    return payload_snapshot(tmp_path_factory.mktemp("snapshot"))


def _open(driver, page: Path) -> None:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    driver.get(page.as_uri())
    # Every window drawn: losses (the first run's payload series among them) and learning
    # rate, each run, the comparison's window for each of the three series and its
    # parallel coordinates.
    WebDriverWait(driver, BROWSER_WAIT_S).until(lambda d: len(d.execute_script(PLOTS_JS)) == 10)


def _plot(driver, title: str, index: int = 0) -> dict:
    return [p for p in driver.execute_script(PLOTS_JS) if p["title"] == title][index]


def test_the_file_opens_offline_with_the_runs_table_and_every_point_of_a_zoom(
    chromium_driver, page
):
    _open(chromium_driver, page)
    rows = chromium_driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert [r.find_element(By.TAG_NAME, "td").text for r in rows] == NAMES
    headers = [th.text for th in chromium_driver.find_elements(By.CSS_SELECTOR, "#runs th")]
    assert headers[:3] == ["name", "state", "steps"] and "config.lr" in headers
    assert "summary.train/loss" in headers

    # Overview: decimated as the viewer decimates (a raw and a smoothed trace share 2000).
    overview = _plot(chromium_driver, "train losses")
    assert len(overview["raw"][0]["x"]) <= 1000

    # A zoom to 600 steps draws every stored point in it (and its neighbours on either side).
    chromium_driver.execute_script(ZOOM_JS, "train losses", [4200, 4799])
    wanted = list(range(4199, 4801))
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: _plot(d, "train losses")["raw"][0]["x"] == wanted
    )
    entries = chromium_driver.execute_script("return performance.getEntriesByType('resource')")
    assert entries == []  # nothing fetched: every byte was in the file
    screenshot(chromium_driver, "snapshot-page")
    assert not [e for e in console_errors(chromium_driver) if "favicon" not in e]


def test_smoothing_and_decimation_are_the_viewers(chromium_driver, page):
    _open(chromium_driver, page)
    drawn = _plot(chromium_driver, "train losses", 1)  # run-1's
    series = Series()
    steps = list(range(POINTS))
    series.extend(steps, [loss(s, 1) for s in steps], [0.0] * POINTS)
    values = series.values()
    assert drawn["raw"][0]["x"] == decimate_indices(values, 1000).tolist()
    smoother = Smoother(0.6)
    smoother.update(series)
    smooth = smoother.values()
    at = drawn["smooth"][0]["x"]
    assert at == decimate_indices(smooth, 1000).tolist()
    np.testing.assert_allclose(drawn["smooth"][0]["y"], smooth[at], rtol=1e-6)


def test_store_text_is_shown_as_text_and_never_runs(chromium_driver, page):
    _open(chromium_driver, page)
    assert chromium_driver.execute_script("return window.__pwned === undefined")
    # The one image is the run's PNG, as a data URL; its caption is text.
    sources = chromium_driver.execute_script(
        "return Array.from(document.images).map(i => [i.src.slice(0, 22), i.naturalWidth])"
    )
    assert sources == [["data:image/png;base64,", 8]]
    caption = chromium_driver.find_element(By.CSS_SELECTOR, "#run-0 figcaption").text
    assert caption.splitlines() == ["sample step 5", PAYLOAD_NAME]
    first_row = chromium_driver.find_element(By.CSS_SELECTOR, "#runs tbody tr td")
    assert first_row.text == PAYLOAD_NAME
    heads = [h.text for h in chromium_driver.find_elements(By.CSS_SELECTOR, ".run-head h2")]
    assert heads == ["Comparison", *NAMES]
    config = chromium_driver.find_element(By.CSS_SELECTOR, "#run-0 .kv").text
    assert PAYLOAD_KEY in config and PAYLOAD_VALUE in config
    # What Plotly draws of the store (a window's title, a legend entry) reads as logged.
    drawn = chromium_driver.execute_script(
        "return Array.from(document.querySelectorAll('#run-0 .gtitle, #run-0 .legendtext'))"
        ".map(t => t.textContent)"
    )
    assert PAYLOAD_SERIES in drawn
    compared = chromium_driver.execute_script(
        "return Array.from(document.querySelectorAll('#comparison .js-plotly-plot'))"
        ".map(div => Array.from(div.querySelectorAll('.legendtext')).map(t => t.textContent))"
    )
    assert NAMES in compared  # a line a run, named as the store names it
    chromium_driver.execute_script("document.getElementById('comparison').scrollIntoView()")
    screenshot(chromium_driver, "snapshot-comparison")
    assert chromium_driver.title == "3 runs: run snapshot"


def test_wall_time_zooms_to_every_stored_point_of_its_range(chromium_driver, page):
    _open(chromium_driver, page)
    Select(chromium_driver.find_element(By.ID, "x-axis")).select_by_visible_text("wall time")
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: d.execute_script(AXIS_JS) == "date"
    )
    text = chromium_driver.execute_script(
        "return document.getElementById('snapshot-data').textContent"
    )
    data = json.loads(text)
    line = data["runs"][0]["windows"][0]["lines"][0]
    x = local_ms(unpacked(data["series"][line["series"]]["times"]))
    lo, hi = x[4200], x[4799]
    # A drag on a date axis reports its range as Plotly's date text, as here.
    ends = [
        datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        for ms in (lo, hi)
    ]
    chromium_driver.execute_script(ZOOM_JS, "train losses", ends)
    inside = np.flatnonzero((x >= lo - 0.5) & (x <= hi + 0.5))
    wanted = x[inside[0] - 1 : inside[-1] + 2]  # and a neighbour on either side

    def drawn(d) -> bool:
        shown = _plot(d, "train losses")["raw"][0]["x"]
        return len(shown) == len(wanted) and np.allclose(shown, wanted, atol=1)

    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(drawn)
    assert len(wanted) >= 600  # more than the overview draws in that stretch


DECODE_JS = """
const [columns, done] = arguments;
Promise.all(columns.map(decodeColumn)).then((out) => done(out.map((a) => Array.from(a, (v) =>
  Number.isNaN(v) ? "nan" : Object.is(v, -0) ? "-0" : Number.isFinite(v) ? v : String(v)))));
"""


def test_the_page_decodes_every_column_type_as_columns_py_does(chromium_driver, page):
    """float32 (with and without a base), int32 differences, int64 and float64 columns."""
    chromium_driver.get(page.as_uri())
    f32 = np.array([0.5, -0.0, np.nan, np.inf, -3.0e38], dtype=np.float32).astype(np.float64)
    arrays = [
        f32,
        1.75e9 + (np.arange(50, dtype=np.float32) * np.float32(0.37)).astype(np.float64),
        np.arange(7, 7 + 3 * 40, 3, dtype=np.int64),
        np.array([5, 2**40, -3], dtype=np.int64),
        np.array([0.1, -0.0, 1e300]),
    ]
    columns = [packed(a) for a in arrays]
    assert [c["type"] for c in columns] == ["float32", "float32", "int32", "int64", "float64"]
    decoded = chromium_driver.execute_async_script(DECODE_JS, columns)

    def shown(v: float) -> object:
        if math.isnan(v):
            return "nan"
        if v == 0 and math.copysign(1, v) < 0:
            return "-0"
        return v if math.isfinite(v) else ("Infinity" if v > 0 else "-Infinity")

    assert decoded == [[shown(float(v)) for v in unpacked(c)] for c in columns]


def test_seeds_are_compared_as_their_mean_and_band(chromium_driver, tmp_path):
    for seed in range(3):
        options = {"lr": 0.1, "seed": seed}
        with Recorder(tmp_path / f"s{seed}" / "pickle", name=f"s{seed}", options=options) as rec:
            for step in range(200):
                rec.log({"loss": loss(step, seed)}, step=step, wall_time=START + step)
    out = tmp_path / "seeds.html"
    assert main(["snapshot", "--pickle-dir", str(tmp_path), "--out", str(out)]) == 0
    chromium_driver.get(out.as_uri())
    traces_js = (
        "const div = document.querySelector('#comparison .plots .js-plotly-plot');"
        "return div && div._fullLayout ? div.data.map(t => [t.meta || '', t.fill || '', "
        "t.x.length, t.name, !!t.customdata]) : null;"
    )
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(lambda d: d.execute_script(traces_js))
    label = "every run (3 runs)"
    assert chromium_driver.execute_script(traces_js) == [
        ["band", "", 200, label, False],
        ["band", "tonexty", 200, label, False],
        ["", "", 200, label, True],  # the mean, whose hover reads the band
        ["smoothed", "", 200, label, False],
    ]


def test_a_sweeps_table_pages_through_every_run_and_the_compared_have_sections(
    chromium_driver, tmp_path
):
    from workloads.many_runs import write_runs

    write_runs(tmp_path / "sweep", 120, points=20, workers=1)
    out = tmp_path / "sweep.html"
    args = ["snapshot", "--pickle-dir", str(tmp_path / "sweep"), "--compare", "2", "--out"]
    assert main([*args, str(out)]) == 0
    chromium_driver.get(out.as_uri())
    count = chromium_driver.find_element(By.ID, "count")
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(lambda d: count.text)
    assert count.text == "1-100 of 120 (of 120 runs)"
    rows = chromium_driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")
    assert len(rows) == 100
    links_js = "return Array.from(document.querySelectorAll('#runs tbody a'), a => a.text)"
    links = chromium_driver.execute_script(links_js)
    chromium_driver.find_element(By.ID, "next").click()
    assert count.text == "101-120 of 120 (of 120 runs)"
    links += chromium_driver.execute_script(links_js)
    assert len(links) == 2  # the compared runs' sections; the rest are rows only
    heads = [h.text for h in chromium_driver.find_elements(By.CSS_SELECTOR, ".run-head h2")]
    assert heads[0] == "Comparison" and sorted(links) == sorted(heads[1:])
    chromium_driver.find_element(By.ID, "filter").send_keys("run-0011")
    assert count.text == "10 of 120 runs"
