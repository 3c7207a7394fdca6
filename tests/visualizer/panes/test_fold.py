"""Many tags degrade gracefully: a run of 10,000 groups gets a page of folded windows that
loads, says what it folded, and leaves the conventional windows whole."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from selenium.webdriver.support.ui import WebDriverWait

from snapshot_store import Recorder
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, console_errors, panes
from tests.fixtures.servers.visdom_reading import VisdomReader
from visualizer import layout
from visualizer.follower import Follower
from visualizer.model.series import Series
from visualizer.panes.fold import MAX_FOLDED_SERIES, MAX_WINDOWS, RunWindow, fold_run, prefix
from visualizer.panes.plotmessage import Line
from visualizer.visdom_client import VisdomClient

GROUPS = 10_000


def _window(group: str) -> RunWindow:
    return layout.window_for_group(group), {"x": Line(Series())}, {"x": (group, "x")}


def test_prefix_is_the_groups_name_up_to_its_first_digit_or_separator() -> None:
    assert [prefix(g) for g in ("layer12.attn", "layer7", "grad_norm", "7up", "a b")] == [
        "layer", "layer", "grad", "other", "a",
    ]  # fmt: skip


def test_up_to_the_limit_windows_are_drawn_as_they_are() -> None:
    windows = [_window(f"g{i}") for i in range(MAX_WINDOWS)]
    assert fold_run(windows) == (windows, None)


def test_past_the_limit_groups_fold_by_prefix_and_conventional_windows_stay() -> None:
    windows = [_window("train"), _window("lr")]
    windows += [_window(f"layer{i}") for i in range(100)] + [_window(f"head{i}") for i in range(3)]
    windows += [_window("odd")]
    drawn, folding = fold_run(windows)
    assert [spec.title for spec, _, _ in drawn] == [
        "train losses", "learning rate", "layer* (100 groups)", "head* (3 groups)", "odd",
    ]  # fmt: skip
    layers = drawn[2]
    assert list(layers[1])[:3] == ["layer0/x", "layer1/x", "layer2/x"]  # numbers as numbers
    assert len(layers[1]) == MAX_FOLDED_SERIES and layers[2]["layer2/x"] == ("layer2", "x")
    assert folding is not None and (folding.windows, folding.series) == (106, 106)
    assert folding.hidden == 100 - MAX_FOLDED_SERIES
    assert "106 plot windows" in folding.note()


def test_ten_thousand_groups_make_a_page_that_loads_and_says_what_it_folded(
    tmp_path: Path, visdom_server: Any, reader: VisdomReader, chromium_driver: Any, run_name: str
) -> None:
    store = tmp_path / run_name / "pickle"
    with Recorder(store, flush_interval=1.0) as rec:
        for step in range(3):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
            for i in range(GROUPS):  # SummaryWriter tags g0/x ... g9999/x
                rec.log_scalar("x", float(i + step), step, group=f"g{i}")
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    windows = reader.windows(run_name)
    assert len(windows) <= MAX_WINDOWS + 3, len(windows)  # with status, view and options
    folded = windows["folded_g"]
    assert folded["title"] == f"g* ({GROUPS:,} groups)"
    assert len(folded["content"]["data"]) == MAX_FOLDED_SERIES
    assert f"{GROUPS + 1:,} plot windows are too many" in windows["options"]["content"]

    started = time.monotonic()
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(lambda d: len(panes(d)) == len(windows))
    print(f"page of {GROUPS:,} groups shown in {time.monotonic() - started:.1f} s")
    page = chromium_driver.execute_script("return document.body.textContent")
    assert f"{GROUPS + 1:,} plot windows are too many for one page" in page
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    chromium_driver.save_screenshot(str(ARTIFACTS / "fold_many_tags.png"))
    assert console_errors(chromium_driver) == []


def test_the_comparison_overlays_its_first_series_and_says_how_many_it_left_out(
    tmp_path: Path, visdom_server: Any, reader: VisdomReader, run_name: str
) -> None:
    for name in ("a", "b"):
        with Recorder(tmp_path / run_name / name / "pickle", flush_interval=1.0) as rec:
            for i in range(MAX_WINDOWS + 5):
                rec.log_scalar("x", float(i), 0, group=f"g{i}")
    Follower(
        str(tmp_path / run_name), VisdomClient(visdom_server.endpoint), env=run_name
    ).run_once()
    windows = reader.windows(f"{run_name}_compare")
    plots = [w for w in windows.values() if w.get("type") == "plot"]
    assert len(plots) == MAX_WINDOWS
    assert "5 more series are not overlaid here" in windows["runs"]["content"]
    assert len(reader.windows(f"{run_name}_a")) <= MAX_WINDOWS + 3  # folded there too
