"""``wandb.init`` while a run is active: W&B's ``reinit`` rules, compared with W&B itself.

W&B (0.19+): ``default`` returns the active run in a script (with a warning) and finishes
it in a notebook; ``finish_previous`` (legacy True) finishes it; ``return_previous``
(legacy False) returns it; ``create_new`` starts one beside it that is not ``wandb.run``.
"""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import pytest

from snapshot_store import read_store
from tests.fixtures.runs.wandb_files import run_under_both, stored_run, wandb_runs

FAKE_TRAINING = Path(__file__).with_name("wandb_fake_training.py")


@pytest.mark.integration
def test_trackios_loop_of_three_inits_makes_the_runs_wandb_makes(tmp_path):
    modes = ("none", "finish_previous", "create_new", "true")
    ref, ours = run_under_both(FAKE_TRAINING, tmp_path, *modes)
    theirs = {run["name"]: run for run in wandb_runs(ref)}
    mine = {
        store.parent.name: stored_run(store)
        for store in (ours / "wandb" / "fake-training").glob("*/pickle")
    }
    # In a script W&B's default returns the first run: one run of 60 steps, not three.
    assert (
        sorted(mine)
        == sorted(theirs)
        == sorted(["none-run-0"] + [f"{mode}-run-{i}" for mode in modes[1:] for i in range(3)])
    )
    assert sorted(theirs["none-run-0"]["history"]["train_loss"]) == list(range(60))
    for name, run in theirs.items():
        assert mine[name]["options"] == run["config"], name
        assert mine[name]["history"].keys() == run["history"].keys(), name
        for key, values in run["history"].items():
            assert mine[name]["history"][key] == pytest.approx(values, rel=1e-6), (name, key)
        assert mine[name]["status"]["state"] == "finished", name


def test_init_again_returns_the_run_with_wandbs_warning_and_a_taken_name_is_numbered(
    wandb, tmp_path, caplog
):
    first = wandb.init(project="p", name="n")
    with caplog.at_level(logging.WARNING):
        assert wandb.init(project="p", name="other") is first  # W&B's default in a script
    assert (
        "so returning the previous run" in caplog.text and "reinit='finish_previous'" in caplog.text
    )
    assert wandb.init(project="p", reinit="return_previous") is first
    second = wandb.init(project="p", name="n", reinit="finish_previous")
    assert first.finished and second.name == "n-2" and wandb.run is second
    with pytest.raises(ValueError, match="ERROR"):
        second.alert("t", "x", level="LOUD")
    with pytest.raises(TypeError, match="must be strings"):
        second.log({1: 2.0})
    second.finish(exit_code=1)
    states = {
        p.parent.name: read_store(p)[2].status["state"]
        for p in (tmp_path / "wandb" / "p").glob("*/pickle")
    }
    assert states == {"n": "finished", "n-2": "failed"}


def test_in_a_notebook_the_default_finishes_the_previous_run(wandb, monkeypatch):
    shell = types.SimpleNamespace(get_ipython=lambda: object())  # W&B's test: a shell runs
    monkeypatch.setitem(sys.modules, "IPython", shell)
    first = wandb.init(project="p", name="a")
    second = wandb.init(project="p", name="b")
    assert first.finished and second is not first and wandb.run is second


def test_create_new_leaves_wandb_run_and_teardown_finishes_every_run(wandb):
    first = wandb.init(project="p", name="a")
    beside = wandb.init(project="p", name="b", reinit="create_new")
    assert wandb.run is first and not first.finished and beside is not first
    assert wandb.init(project="p", reinit=False) is beside  # the latest active run
    wandb.teardown()
    assert first.finished and beside.finished and wandb.run is None


def test_wandb_reinit_from_the_environment_and_a_value_wandb_refuses(wandb, monkeypatch):
    monkeypatch.setenv("WANDB_REINIT", "true")
    first = wandb.init(project="p", name="a")
    assert wandb.init(project="p", name="b") is not first and first.finished
    with pytest.raises(ValueError, match="reinit must be 'default', 'return_previous'"):
        wandb.init(project="p", reinit="sometimes")


def test_the_summary_is_in_the_status_while_the_run_logs(wandb, tmp_path):
    """W&B's runs table shows a live run's summary; ours had it only from ``finish``."""
    run = wandb.init(project="p", name="live")
    run.summary["best_model"] = "resnet"
    run.summary["best"] = {"epoch": 1}
    run.log({"loss": 0.5})
    assert run._writer.recorder.flush()
    [store] = (tmp_path / "wandb" / "p").glob("live/pickle")
    status = read_store(store)[2].status
    assert status["state"] == "running"
    assert status["summary"] == {"best_model": "resnet", "loss": 0.5, "best": {"epoch": 1}}
