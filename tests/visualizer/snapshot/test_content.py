"""What a snapshot holds, built from the viewer's model: the runs table, each run's windows
as the live page lays them out, every stored point, config and summary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from snapshot_store import Recorder
from visualizer.panes.display import run_windows
from visualizer.snapshot import content
from visualizer.snapshot.columns import unpacked
from visualizer.snapshot.content import build, json_cell, read_run


@pytest.fixture
def root(tmp_path):
    for run in range(3):
        options = {"lr": 0.1 * (run + 1), "model": {"depth": run}}
        with Recorder(tmp_path / f"r{run}" / "pickle", name=f"run-{run}", options=options) as rec:
            for step in range(0, 300, 3):
                rec.log({"loss": 1.0 / (step + 1), "lr": 0.1}, step=step)
                rec.log({"accuracy": step / 300.0}, step=step, group="validation")
    return tmp_path


def test_every_run_its_table_row_and_its_config_and_summary(root):
    data = build(str(root))
    table = data["table"]
    assert table["columns"][:5] == ["name", "state", "steps", "start", "duration"]
    names = [row[0] for row in table["rows"]]
    assert names == ["run-0", "run-1", "run-2"]
    first = data["runs"][0]
    assert first["name"] == "run-0" and first["state"] == "finished" and first["step"] == 297
    assert first["config"]["lr"] == pytest.approx(0.1) and first["config"]["model.depth"] == 0
    assert first["summary"]["train/loss"] == pytest.approx(1 / 298)


def test_the_windows_are_the_live_pages_and_hold_every_point(root, tmp_path):
    data = build(str(root), runs="^run-1$")
    run = data["runs"]
    assert data["comparison"] is None  # one run: nothing to compare
    assert [r["name"] for r in run] == ["run-1"]
    live = run_windows(read_run("run-1", str(root / "r1" / "pickle")))
    windows = run[0]["windows"]
    assert [w["title"] for w in windows] == [spec.title for spec, _, _ in live]
    assert [[line["label"] for line in w["lines"]] for w in windows] == [
        list(lines) for _, lines, _ in live
    ]
    loss = windows[0]["lines"][0]
    assert loss["tag"] == "train/loss"
    columns = data["series"][loss["series"]]
    steps = unpacked(columns["steps"])
    np.testing.assert_array_equal(steps, np.arange(0, 300, 3))
    np.testing.assert_array_equal(unpacked(columns["values"]), 1.0 / (steps + 1))
    times = unpacked(columns["times"])
    assert np.isfinite(times).all() and loss["origin"] == pytest.approx(times[0], abs=1e-3)
    layouts = windows[0]["layouts"]
    assert (
        set(layouts) == {"step", "relative", "wall"} and layouts["wall"]["xaxis"]["type"] == "date"
    )


def test_the_comparison_is_the_live_ones_and_shares_the_runs_columns(root):
    data = build(str(root))
    windows = data["comparison"]["windows"]
    assert [w["title"] for w in windows] == [
        "train losses: loss (3 runs)",
        "validation scores: accuracy (3 runs)",
        "learning rate: train/lr (3 runs)",
    ]
    lines = windows[0]["lines"]
    assert [line["label"] for line in lines] == ["run-0", "run-1", "run-2"]
    assert [line["color"] for line in lines] == ["#1f77b4", "#ff7f0e", "#2ca02c"]
    # Each run's series is packed once, drawn by its run's window and the comparison alike.
    assert len(data["series"]) == 9
    first = data["runs"][0]["windows"][0]["lines"][0]
    assert first["series"] == lines[0]["series"] and windows[0]["windowPoints"] == 60_000


def test_the_comparison_has_the_live_parallel_coordinates(root):
    shown = build(str(root))["comparison"]["parcoords"]
    (trace,) = shown["data"]
    labels = [dimension["label"] for dimension in trace["dimensions"]]
    assert trace["type"] == "parcoords" and labels == ["lr", "model", "train/loss (best)"]
    assert trace["dimensions"][0]["values"] == pytest.approx([0.1, 0.2, 0.3])


def test_the_comparison_overlays_the_runs_the_live_page_compares(root):
    data = build(str(root), compare=2)
    compared = data["comparison"]
    assert (compared["of"], compared["compared"]) == (3, 2)
    # A finished sweep: the best by its most logged series (issue 48), here tied: by name.
    assert [line["label"] for line in compared["windows"][0]["lines"]] == ["run-0", "run-1"]
    assert len(data["runs"]) == 3  # every run still has its section
    assert data["table"]["sections"] == [0, 1, 2]


def test_past_a_hundred_runs_only_the_compared_have_a_section(root, monkeypatch):
    monkeypatch.setattr(content, "SECTIONS_OF_ALL", 2)  # a sweep: more runs than that
    data = build(str(root), compare=2)
    assert [row[0] for row in data["table"]["rows"]] == ["run-0", "run-1", "run-2"]
    assert [run["name"] for run in data["runs"]] == ["run-0", "run-1"]
    assert data["table"]["sections"] == [0, 1, None]  # run-2: a row of the table only
    assert {unpacked(c["values"])[-1] for c in data["series"]} <= {1.0 / 298, 0.1, 297 / 300.0}


def test_seeds_of_one_config_are_compared_as_their_mean_and_band(tmp_path):
    for seed in range(3):
        with Recorder(tmp_path / f"s{seed}" / "pickle", name=f"s{seed}",
                      options={"lr": 0.1, "seed": seed}) as rec:  # fmt: skip
            for step in range(10):
                rec.log({"loss": float(seed + step)}, step=step)
    data = build(str(tmp_path))
    compared = data["comparison"]
    assert compared["groups"] == [{"label": "every run (3 runs)", "runs": ["s0", "s1", "s2"]}]
    (line,) = compared["windows"][0]["lines"]
    assert line["label"] == "every run (3 runs)" and line["band"] == "rgba(31,119,180,0.2)"
    columns = data["series"][line["series"]]
    np.testing.assert_allclose(unpacked(columns["values"]), np.arange(10) + 1.0)
    np.testing.assert_allclose(unpacked(columns["low"]), np.arange(10))
    np.testing.assert_allclose(unpacked(columns["high"]), np.arange(10) + 2.0)
    ungrouped = build(str(tmp_path), group_by="")["comparison"]
    assert [x["label"] for x in ungrouped["windows"][0]["lines"]] == ["s0", "s1", "s2"]


def test_what_plotly_draws_is_escaped(tmp_path):
    with Recorder(tmp_path / "x" / "pickle", name="x") as rec:
        rec.log({"<b>bold</b>": 1.0}, step=0, group="<i>g</i>")
    window = build(str(tmp_path))["runs"][0]["windows"][0]
    assert window["title"] == "<i>g</i>"  # the page's own text
    assert window["layouts"]["step"]["title"]["text"] == "&lt;i&gt;g&lt;/i&gt;"
    assert window["lines"][0]["label"] == "&lt;b&gt;bold&lt;/b&gt;"


def test_no_run_or_no_match_is_one_line(tmp_path, root):
    with pytest.raises(FileNotFoundError, match="no snapshot store found"):
        build(str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=r"--runs 'zzz' matches none of the 3 runs"):
        build(str(root), runs="zzz")


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, None), (True, True), (3, 3), (0.5, 0.5), (math.nan, "nan"), (math.inf, "inf"),
     ("t", "t"), ((1, 2), "(1, 2)")],
)  # fmt: skip
def test_a_table_cell_is_what_json_holds(value, shown):
    assert json_cell(value) == shown


def test_a_broken_store_is_a_section_of_its_own_and_the_others_are_whole(root):
    broken = root / "zz" / "pickle"
    broken.mkdir(parents=True)
    (broken / "meta.pickle").write_bytes(b"not a pickle")
    (broken / "status.pickle").write_bytes(b"\x80\x05not either")
    data = build(str(root))
    last = data["runs"][-1]
    # The reader skips both documents with a warning each: a run with nothing to draw.
    assert last["name"] == "zz" and last["state"] == "no status yet" and last["windows"] == []
    windows = data["comparison"]["windows"]
    assert [line["label"] for line in windows[0]["lines"]] == ["run-0", "run-1", "run-2"]


def test_the_alerts_a_runs_writer_sent_are_in_its_section(tmp_path):
    """What the run told people itself (its rules on the writer thread), as its status keeps it."""
    from snapshot_store.alerting.on_writer import alert_settings

    told: list[dict] = []
    settings = alert_settings(["train/loss>1"], command=told.append)
    with Recorder(tmp_path / "runs" / "a" / "pickle", alerts=settings) as rec:
        rec.log({"loss": 2.0}, step=3)
    run = next(r for r in build(str(tmp_path / "runs"))["runs"] if r["name"] == "a")
    assert [(a["event"], a["detail"]) for a in run["alerts"]] == [
        (t["event"], t["detail"]) for t in told
    ]
    assert [a["event"] for a in run["alerts"]] == ["rule", "finished"]
