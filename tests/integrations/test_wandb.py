"""remote_train_monitor.wandb: a W&B script, its import changed, stores what W&B logs.

The reference is W&B itself: the same script runs with ``import wandb`` (offline mode,
no account, no network), and its run file is read back beside our store.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from run_core.tags import key_of
from snapshot_store import read_store
from tests.fixtures.runs.examples import run_example
from tests.fixtures.runs.wandb_files import (
    one_run_under_both,
    run_under_both,
    stored_run,
    wandb_run,
)

MNIST = Path(__file__).with_name("wandb_mnist.py")
NANOGPT = Path(__file__).with_name("wandb_nanogpt.py")


@pytest.mark.integration
def test_wandbs_mnist_example_stores_wandbs_keys_steps_and_values(tmp_path):
    ref, ours = one_run_under_both(MNIST, tmp_path, "--epochs", "2")
    assert set(ours["history"]) == set(ref["history"]) == {
        "batch_loss", "Examples", "Test Accuracy", "Test Loss",
    }  # fmt: skip
    for key in ("batch_loss", "Test Accuracy", "Test Loss"):
        assert ours["history"][key] == pytest.approx(ref["history"][key], rel=1e-6), key
    assert sorted(ours["history"]["Examples"]) == sorted(ref["history"]["Examples"]) == [4, 9]
    examples = ref["history"]["Examples"][4]
    assert (examples["count"], examples["height"], examples["width"]) == (4, 28, 28)
    assert ours["history"]["Examples"][4][:2] == (28, 4 * 28)  # the four tiled in a row
    assert ours["options"] == ref["config"] and ours["options"]["lr"] == 0.05
    [(kind, tag, step, row)] = [e for e in ours["extras"] if e[0] == "hparams"]
    assert (kind, tag, step) == ("hparams", "n", 10) and row["hparams"] == ref["config"]
    numeric = {
        k: v for k, v in ref["summary"].items() if not k.startswith("_") and isinstance(v, float)
    }
    assert row["metrics"] == pytest.approx(numeric) and ours["status"]["state"] == "finished"


@pytest.mark.integration
def test_nanogpts_wandb_path_stores_its_config_and_tensor_losses_as_wandb_does(tmp_path):
    ref_dir, ours_dir = run_under_both(NANOGPT, tmp_path, "--max_iters=20")
    ref, ours = wandb_run(ref_dir), stored_run(ours_dir / "wandb" / "owt" / "gpt2" / "pickle")
    keys = {"iter", "train/loss", "val/loss", "lr", "mfu"}
    assert set(ours["history"]) == set(ref["history"]) == keys
    assert sorted(ref["history"]["iter"]) == [0, 1, 2, 3, 4]  # a step per log, 5 evals
    for key in keys:
        assert ours["history"][key] == pytest.approx(ref["history"][key], rel=1e-6), key
    assert ref["history"]["mfu"][0] == -100.0
    assert ours["options"] == ref["config"] and ref["config"]["max_iters"] == 20
    assert ours["status"]["summary"] == ref["logged"], "the summary: each key's last value"


@pytest.mark.integration
def test_wandbs_step_and_commit_rules_summaries_and_media_are_wandbs(tmp_path):
    ref, ours = one_run_under_both(Path(__file__).with_name("wandb_steps.py"), tmp_path)
    scalars = {"a", "b", "c", "d", "val_loss", "nested.x", "nested.y"}
    assert set(ref["history"]) == scalars | {"weights", "note", "predictions"}
    for key in scalars:
        assert ours["history"][key] == ref["history"][key], key
    assert ref["history"]["a"] == {0: 1, 1: 3, 5: 4}  # step 3 came after 5: dropped
    extras = {(kind, tag): (step, data) for kind, tag, step, data in ours["extras"]}
    step, histogram = extras[("histogram", "weights")]
    assert step == 10 and histogram["counts"] == ref["history"]["weights"][10]["values"]
    assert histogram["limits"] == ref["history"]["weights"][10]["bins"][1:]
    assert extras[("text", "note")] == (11, {"text": ref["history"]["note"][11]})
    step, table = extras[("table", "predictions")]
    assert step == 12 and table == {"columns": ["epoch", "accuracy"], "rows": [[1, 0.5], [2, 0.75]]}
    assert ref["history"]["predictions"][12]["_type"] == "table-file"
    assert [e[1:] for e in ours["extras"] if e[0] == "alert"] == [
        ("done", 13, {"text": "the loop ended", "level": "WARN"})
    ]  # the second alert of that title came within W&B's minute: not sent
    [row] = [data for kind, _tag, _step, data in ours["extras"] if kind == "hparams"]
    assert row["metrics"] == pytest.approx(ref["summary"]) and row["metrics"]["val_loss.min"] == 0.5
    assert ours["options"] == ref["config"] == {
        "lr": 0.1, "layers": [64, 32], "optimizer": {"name": "adam", "beta": 0.9}, "epochs": 2,
    }  # fmt: skip


def test_config_is_set_once_per_key_as_wandbs(wandb, tmp_path):
    run = wandb.init(project="p", name="n", config={"--lr": 0.1})
    assert wandb.run is run and wandb.config is run.config
    assert run.config.lr == run.config["lr"] == 0.1 and "lr" in run.config
    run.config.batch_size = 32
    with pytest.raises(wandb.ConfigError, match="allow_val_change=True"):
        run.config.update({"lr": 0.2})
    run.config.update({"lr": 0.2}, allow_val_change=True)
    run.config.setdefaults({"lr": 0.3, "epochs": 2})
    assert run.config.as_dict() == {"lr": 0.2, "batch_size": 32, "epochs": 2}
    run.finish()
    store = tmp_path / "wandb" / "p" / "n" / "pickle"
    assert read_store(store)[2].meta["options"] == {"lr": 0.2, "batch_size": 32, "epochs": 2}


def test_an_exception_in_the_with_block_fails_the_run(wandb, tmp_path):
    with pytest.raises(RuntimeError), wandb.init(project="p", name="n") as run:
        run.log({"loss": 1.0})
        raise RuntimeError("diverged")
    assert read_store(tmp_path / "wandb" / "p" / "n" / "pickle")[2].status["state"] == "failed"


@pytest.mark.parametrize(
    "env, kwargs",
    [
        ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}, {}),
        ({}, {"mode": "disabled"}),
    ],
)
def test_another_rank_or_a_disabled_run_stores_nothing(wandb, tmp_path, monkeypatch, env, kwargs):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    run = wandb.init(project="p", config={"lr": 0.1}, **kwargs)
    wandb.log({"loss": 1.0, "img": wandb.Image(np.zeros((4, 4, 3)))})
    wandb.alert("t", "x")
    assert run.step == 1 and run.summary["loss"] == 1.0
    run.finish()
    assert not (tmp_path / "wandb").exists()


def test_media_store_their_plain_form(wandb, tmp_path):
    import torch

    run = wandb.init(project="p", name="n")
    chw = torch.full((3, 2, 5), 200.0)
    run.log({"img": wandb.Image(chw), "grads": torch.arange(100.0), "none": None})
    run.log({"gallery": [wandb.Image(np.full((2, 3), 9, np.uint8)), wandb.Image(np.zeros((4, 2)))]})
    run.finish()
    _, _, update = read_store(tmp_path / "wandb" / "p" / "n" / "pickle")
    from snapshot_store.format.images import decode_png

    images = {name: decode_png(png) for _g, name, _s, _e, _w, png in update.images}
    assert images["img"].shape == (2, 5, 3) and (images["img"] == 200).all()
    assert images["gallery"].shape[:2] == (4, 2 * 3)  # padded to the largest, in a row
    [(kind, tag, step, data)] = [(*e[:3], e[4]) for e in update.extras if e[0] != "hparams"]
    assert (kind, tag, step, len(data["counts"]), data["num"]) == (
        "histogram",
        "grads",
        0,
        32,
        100.0,
    )


def test_saved_files_and_the_store_go_through_the_transfer_hook(wandb, tmp_path, monkeypatch):
    import torch

    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(shared))
    assert wandb.login(key="not needed") is False  # as W&B offline: no login verified
    run = wandb.init(
        project="p",
        name="n",
        settings=wandb.Settings(start_method="thread"),
        remote_transfer_cmd="transfer_plugins.local.copy_to",
    )
    run.log({"loss": 0.5})
    torch.save({"w": torch.ones(2)}, Path(run.dir) / "model.pt")  # W&B examples save there
    (tmp_path / "notes.txt").write_text("kept")
    assert wandb.save(str(Path(run.dir) / "model.pt")) == [str(Path(run.dir) / "model.pt")]
    assert wandb.save(str(tmp_path / "*.txt")) == [str(Path(run.dir) / "notes.txt")]
    run.finish()
    assert torch.load(shared / "p" / "n" / "files" / "model.pt")["w"].tolist() == [1.0, 1.0]
    assert (shared / "p" / "n" / "files" / "notes.txt").read_text() == "kept"
    assert read_store(shared / "p" / "n" / "pickle")[0].series(key_of("loss"))[3] == [0.5]


@pytest.mark.integration
def test_under_torchrun_every_rank_may_call_init_and_rank_zero_alone_writes(tmp_path):
    from tests.fixtures.runs.training import torchrun_cmd

    # W&B's examples/pytorch/pytorch-ddp/log-all.py way: every process calls init and logs.
    cmd = torchrun_cmd(
        "--standalone", "--nproc-per-node", "2", str(MNIST),
        "remote_train_monitor.wandb", "--epochs", "1",
    )  # fmt: skip
    run_example(cmd, tmp_path, WANDB_DIR=str(tmp_path), WANDB_PROJECT="p", WANDB_NAME="n")
    [store] = (tmp_path / "wandb" / "p").glob("*/pickle")
    ours = stored_run(store)
    assert store.parent.name == "n" and ours["status"]["state"] == "finished"
    assert sorted(ours["history"]["Test Loss"]) == [4]  # one process's steps, not two


@pytest.mark.parametrize("bad", [{"step": 2**63}, {"step": -(2**63) - 1}, "nested"])
def test_a_step_past_int64_or_a_dict_past_the_depth_limit_raises_and_the_run_goes_on(
    wandb, tmp_path, bad
):
    deep = current = {}
    for _ in range(5000):
        current["k"] = current = {}
    run = wandb.init(project="p", name="n", config={"lr": 0.1})
    run.log({"a": 1.0})
    call, error = ({"data": deep}, "more than 100 levels") if bad == "nested" else (bad, "range")
    with pytest.raises(ValueError, match=error):
        run.log(**{"data": {"a": 2.0}, **call})
    run.log({"a": 3.0})
    run.finish()
    ours = stored_run(tmp_path / "wandb" / "p" / "n" / "pickle")  # the reader warned of nothing
    assert ours["history"] == {"a": {0: 1.0, 1: 3.0}} and ours["options"] == {"lr": 0.1}
    assert [(kind, step) for kind, _tag, step, _data in ours["extras"]] == [("hparams", 2)]


def test_after_int64s_last_step_alerts_tables_and_logs_stay_at_it(wandb, tmp_path):
    last = 2**63 - 1
    run = wandb.init(project="p", name="n")
    run.log({"a": 1.0}, step=last)
    run.log({"a": 2.0})  # stored at the last step; the step after it is no step
    run.log({"a": 3.0})  # raised StepRangeError, as did every call after it
    run.alert("title", "text")
    run.log({"t": wandb.Table(columns=["x"], data=[[1]])})
    run.finish()
    ours = stored_run(tmp_path / "wandb" / "p" / "n" / "pickle")
    assert ours["history"]["a"] == {last: 3.0}
    assert {(kind, step) for kind, _tag, step, _data in ours["extras"]} >= {("alert", last)}


HOSTILE = "<img src=x onerror=alert(1)>"  # wandb_captions.py's: must stay text


@pytest.fixture(scope="module")
def captions_run(tmp_path_factory):
    """wandb_captions.py under W&B and under ours: W&B's run, ours, our runs' folder."""
    tmp_path = tmp_path_factory.mktemp("captions")
    ref, ours = one_run_under_both(Path(__file__).with_name("wandb_captions.py"), tmp_path)
    return ref, ours, str(tmp_path / "ours" / "wandb" / "p")


@pytest.mark.integration
def test_image_captions_are_wandbs_and_come_back_from_the_api_and_export(captions_run):
    import io
    import json

    from remote_train_monitor import Api
    from visualizer.sources.export import export

    ref, ours, root = captions_run
    assert ours["captions"] == {
        "sample": {0: [ref["history"]["sample"][0]["caption"]]},
        "batch": {1: ref["history"]["batch"][1]["captions"]},
    } and ours["captions"]["sample"][0] == [f"a cat {HOSTILE}"]
    [run] = Api().runs(root)
    assert run.images()["batch"][0].captions == ["pred 0", "pred 1", "pred 2"]
    out = io.StringIO()
    export(root, out, kind="image")
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["data"]["captions"] for line in lines] == [
        [f"a cat {HOSTILE}"], ["pred 0", "pred 1", "pred 2"],
    ]  # fmt: skip


@pytest.mark.integration
def test_a_summary_of_text_dicts_and_lists_and_a_nested_config_are_kept_as_logged(captions_run):
    from remote_train_monitor import Api
    from visualizer.api.table import runs_columns

    ref, ours, root = captions_run
    assert ref["logged"]["best"] == {"epoch": 3, "acc": 0.9} and ref["logged"]["hostile"] == HOSTILE
    assert ours["status"]["summary"] == ref["logged"]
    assert ours["options"] == ref["config"] and ref["config"]["img_size"] == [640, 640]
    [run] = Api().runs(root)
    assert {k: v for k, v in run.summary.items() if not k.startswith("_")} == ref["logged"]
    assert run.config == ref["config"]
    columns = {k: v[0] for k, v in runs_columns([run]).items()}  # flattened: table columns
    assert columns["summary.best_model"] == "resnet" and columns["summary.best.epoch"] == 3
    assert columns["summary.classes"] == '["cat", "dog"]' and columns["config.hyp.lr0"] == 0.01
