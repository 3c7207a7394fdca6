"""W&B's summaries and names, compared with W&B 0.31 itself (offline run files).

``define_metric`` keeps every summary kind asked for a key, merged as W&B merges two
definitions of one name; ``run.name = ...`` lists the run under its new name in the
runs table, the Api and the export, its folder unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_store import read_store
from tests.fixtures.runs.wandb_files import run_under_both, stored_run, wandb_run

SUMMARIES = Path(__file__).with_name("wandb_summaries.py")


@pytest.fixture(scope="module")
def summaries_run(tmp_path_factory):
    """The summaries script under W&B and under ours: W&B's run, ours, our runs' root."""
    tmp_path = tmp_path_factory.mktemp("summaries")
    ref, ours = run_under_both(SUMMARIES, tmp_path)
    root = ours / "wandb" / "p"
    return wandb_run(ref), stored_run(root / "n" / "pickle"), root


@pytest.mark.integration
def test_every_summary_kind_and_a_key_defined_twice_are_kept_as_wandb_keeps_them(summaries_run):
    ref, ours, _root = summaries_run
    assert ref["logged"]["loss"] == {"min": 1, "max": 5}  # min, then max: both kept
    assert ref["logged"]["kind_mean"] == {"mean": 2.75} and ref["logged"]["kind_copy"] == 5
    assert "kind_none" not in ref["logged"] and "none_later" not in ref["logged"]
    assert ref["logged"]["errors"] == ["Unhandled define_metric() arg: summary op: best"] * 2
    assert ours["status"]["summary"] == ref["logged"]
    [row] = [data for kind, _tag, _step, data in ours["extras"] if kind == "hparams"]
    assert row["metrics"] == pytest.approx(ref["summary"]) and row["metrics"]["loss.max"] == 5


@pytest.mark.integration
def test_a_renamed_run_is_listed_under_its_new_name_everywhere(summaries_run):
    from remote_train_monitor import Api
    from visualizer.api.table import runs_columns
    from visualizer.sources.export import find_specs

    ref, _ours, root = summaries_run
    assert ref["name"] == "renamed"
    assert (root / "n" / "pickle").is_dir()  # the folder stays
    _history, _reader, update = read_store(root / "n" / "pickle")
    assert update.meta["name"] == update.status["name"] == "renamed"
    [run] = Api().runs(str(root))
    assert run.name == "renamed" and runs_columns([run])["name"] == ["renamed"]
    assert [spec.name for spec in find_specs(str(root))] == ["renamed"]


def test_a_rename_before_anything_is_logged_and_a_summary_kind_wandb_refuses(wandb, tmp_path):
    run = wandb.init(project="p", name="first")
    run.name = "second"
    with pytest.raises(wandb.Error, match="summary op: best"):
        run.define_metric("acc", summary="best")
    with pytest.raises(wandb.Error, match="glob suffixes only"):
        run.define_metric("a*b", summary="min")
    run.finish()
    assert run.name == "second" and run.id == "first"
    assert read_store(tmp_path / "wandb" / "p" / "first" / "pickle")[2].meta["name"] == "second"
