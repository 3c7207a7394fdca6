"""Grouping compared runs by every config value but one key, and their curves per window."""

from __future__ import annotations

import pytest

from snapshot_store import Recorder
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.model.rundata import RunData
from visualizer.model.series import Series
from visualizer.panes.groups import GroupCurves, group_runs, parse_group_by, varying_keys
from visualizer.panes.parcoords import PARCOORDS_WIN
from visualizer.panes.plotmessage import Line


def run(name: str, options: dict | None, points: list[float] | None = None) -> RunData:
    data = RunData(name)
    data.meta = {"options": options} if options is not None else None
    if points is not None:
        series = data.series[("train", "loss")] = Series()
        series.extend(range(len(points)), points)
    return data


def sweep() -> list[RunData]:
    return [
        run(f"lr{lr}-s{seed}", {"lr": lr, "batch": 32, "seed": seed}, [lr * seed, lr])
        for lr in (0.1, 0.01)
        for seed in (1, 2, 3)
    ]


def test_runs_that_differ_only_by_the_seed_are_one_group_named_by_what_differs():
    groups = group_runs(sweep(), "seed")
    assert [(g.label, g.runs) for g in groups] == [
        ("lr=0.01 (3 runs)", ("lr0.01-s1", "lr0.01-s2", "lr0.01-s3")),
        ("lr=0.1 (3 runs)", ("lr0.1-s1", "lr0.1-s2", "lr0.1-s3")),
    ]


def test_no_key_a_run_alone_or_without_config_is_its_own_group():
    runs = [*sweep()[:2], run("bare-1", None), run("bare-2", None), run("other", {"lr": 5})]
    assert all(len(g.runs) == 1 for g in group_runs(runs, ""))
    groups = {g.label: g.runs for g in group_runs(runs, "seed")}
    assert groups["bare-1"] == ("bare-1",) and groups["bare-2"] == ("bare-2",)
    assert groups["other"] == ("other",)
    assert groups["batch=32, lr=0.1 (2 runs)"] == ("lr0.1-s1", "lr0.1-s2")


def test_runs_without_the_key_group_by_their_other_keys():
    runs = [run("a", {"lr": 1}), run("b", {"lr": 1}), run("c", {"lr": 2, "seed": 4})]
    assert [g.runs for g in group_runs(runs, "seed")] == [("a", "b"), ("c",)]


def test_varying_keys_include_a_key_some_runs_lack():
    assert varying_keys([{"a": 1, "b": 2}, {"a": 1, "b": 3}, {"a": 1, "c": 0}]) == ["b", "c"]


def test_a_window_draws_a_group_as_its_mean_with_its_band_and_reuses_it_until_a_run_grows():
    runs = sweep()
    by_run = {r.name: Line(r.series[("train", "loss")]) for r in runs}
    groups = group_runs(runs, "seed")
    curves = GroupCurves()
    first = curves.lines({("train", "loss"): by_run}, groups, {r.name: r for r in runs})
    lines = first[("train", "loss")]
    assert sorted(lines) == ["lr=0.01 (3 runs)", "lr=0.1 (3 runs)"]
    group = lines["lr=0.1 (3 runs)"]
    assert group.series.values().tolist() == pytest.approx([0.2, 0.1])
    assert group.band is not None
    assert group.band[0].tolist() == pytest.approx([0.1, 0.1])
    assert group.band[1].tolist() == pytest.approx([0.3, 0.1])
    again = curves.lines({("train", "loss"): by_run}, groups, {r.name: r for r in runs})
    assert again[("train", "loss")]["lr=0.1 (3 runs)"] is group, "nothing new: not recomputed"
    runs[0].series[("train", "loss")].extend([2], [1.0])
    grown = curves.lines({("train", "loss"): by_run}, groups, {r.name: r for r in runs})
    redone = grown[("train", "loss")]["lr=0.1 (3 runs)"]
    assert len(redone.series) == 3 and redone.series.rewinds == group.series.rewinds + 1


@pytest.mark.parametrize("text", [" seed", "seed\n", "a\x1bb"])
def test_a_group_key_with_spaces_around_or_control_characters_is_refused(text):
    with pytest.raises(ValueError, match="is not a config key"):
        parse_group_by(text)


def test_an_empty_group_key_turns_grouping_off():
    assert parse_group_by("") == "" and parse_group_by("train.seed") == "train.seed"


def test_a_followed_sweep_draws_a_curve_and_band_per_group_and_parallel_coordinates(
    tmp_path, visdom_server, reader, run_name
):
    root = tmp_path / run_name
    for lr in (0.1, 0.01):
        for seed in (1, 2, 3):
            options = {"lr": lr, "batch_size": 32, "seed": seed}
            with Recorder(root / f"lr{lr}-seed{seed}" / "pickle", options=options) as rec:
                for step in range(0, 30, seed):  # misaligned steps between seeds
                    rec.log({"loss": lr * 10 / (step + 1) + 0.01 * seed}, step=step)
    env = f"{run_name}_compare"
    with following(root, visdom_server.endpoint, env=run_name):
        window = wait_until(
            lambda: (
                (w := reader.windows(env).get("compare_train_loss"))
                and len({t["name"] for t in w["content"]["data"]}) == 2
                and w
            )
        )
        parcoords = wait_until(lambda: reader.windows(env).get(PARCOORDS_WIN))
    data = window["content"]["data"]
    bands = [t for t in data if t.get("meta") == "band"]
    assert {t["name"] for t in data} == {"lr=0.01 (3 runs)", "lr=0.1 (3 runs)"}
    assert len(bands) == 4 and sum(t.get("fill") == "tonexty" for t in bands) == 2
    steps = next(t for t in data if t["name"] == "lr=0.1 (3 runs)" and "meta" not in t)["x"]
    assert steps == list(range(30)), "the union of the seeds' steps"
    (trace,) = parcoords["content"]["data"]
    assert trace["type"] == "parcoords"
    labels = [d["label"] for d in trace["dimensions"]]
    assert labels == ["lr", "train/loss (best)"], "grouped by seed: no seed axis"


def test_runs_alike_in_every_key_the_grouping_one_included_keep_their_own_curves():
    runs = [run("a", {"lr": 1, "seed": 7}), run("b", {"lr": 1, "seed": 7}), run("c", {"lr": 2})]
    assert [g.runs for g in group_runs(runs, "seed")] == [("a",), ("b",), ("c",)]
