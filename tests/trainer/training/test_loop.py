"""trainer.training.loop: the one training loop, in process.

In-process ``fit`` runs check resume (at an epoch boundary and mid-epoch after a
crash), early stopping, the result object and live plots. Real torchrun runs are
in test_loop_ddp.py.
"""

from __future__ import annotations

import functools
import json
import logging

import pytest
import torch
from torch import nn

from tests.fixtures.runs.training import (
    raw_steps,
    read_run,
    series,
)
from trainer import fit
from trainer.command.data import load_datasets
from trainer.command.models import SmallCNN, accuracy
from trainer.training import checkpoint
from trainer.training.config import UsageError
from trainer.training.loop import FitResult

STEPS_PER_EPOCH = 6  # 48 training images, batch 8


def _fit(
    root, checkpoints, name: str, n_epochs: int, criterion=None, datasets=None, **kwargs
) -> FitResult:
    checkpoint.seed_everything(0)
    model = SmallCNN(num_classes=3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    options = dict(
        batch_size=8,
        num_epochs=n_epochs,
        scheduler=scheduler,
        checkpoints_dir=checkpoints,
        name=name,
        remote=True,
        print_freq=2,
        device="cpu",
        progress=False,
        metrics={"accuracy": accuracy},
    )
    options.update(kwargs)
    if "dataset_fn" not in options:
        options["datasets"] = datasets or load_datasets(root)
    return fit(model, criterion or nn.CrossEntropyLoss(), optimizer, **options)


@pytest.fixture(scope="module")
def continuous(tiny_dataset, tmp_path_factory) -> FitResult:
    """3 uninterrupted epochs: what every resumed run must reproduce."""
    return _fit(tiny_dataset, tmp_path_factory.mktemp("continuous"), "run", n_epochs=3)


def _assert_same_run(resumed: FitResult, reference: FitResult) -> None:
    for (name, p), q in zip(
        resumed.model.state_dict().items(), reference.model.state_dict().values()
    ):
        assert torch.equal(p, q), name
    for key in ("train/loss", "val/loss", "metric/accuracy", "lr/lr"):
        assert [(s, v) for s, _, v in resumed.history[key]] == [
            (s, v) for s, _, v in reference.history[key]
        ], key


def test_result_describes_the_run(continuous):
    run_dir = continuous.run_dir
    assert continuous.epochs_completed == 3 and continuous.global_step == 3 * STEPS_PER_EPOCH
    assert continuous.latest_checkpoint == run_dir / "latest.pth"
    assert continuous.best_checkpoint == run_dir / "best.pth"
    val = continuous.values("val/loss")
    assert continuous.best_value == min(val) and continuous.best_epoch == val.index(min(val)) + 1
    assert continuous.values("lr/lr")[0] == 0.05 and continuous.values("lr/lr")[-1] == 0.0125
    assert (run_dir / "loss_log.txt").read_text().count("validation (12 samples)") == 3
    state = torch.load(continuous.latest_checkpoint, weights_only=True)
    assert set(state) >= {"model", "optimizer", "scheduler", "epoch", "step", "rng", "options"}
    history, _, status = read_run(run_dir)
    assert status["state"] == "finished"
    assert series(history, "train/loss") == (
        [s for s, _, _ in continuous.history["train/loss"]],
        continuous.values("train/loss"),
    )


def test_continue_train_resumes_exactly_and_the_curve_continues(tiny_dataset, tmp_path, continuous):
    _fit(tiny_dataset, tmp_path, "run", n_epochs=1)
    resumed = _fit(tiny_dataset, tmp_path, "run", n_epochs=3, continue_train=True)
    _assert_same_run(resumed, continuous)
    history, meta, _ = read_run(tmp_path / "run")
    assert len(meta["sessions"]) == 2
    assert series(history, "train/loss")[1] == continuous.values("train/loss")
    steps = raw_steps(tmp_path / "run", "train/loss")
    assert steps == sorted(set(steps)) == list(range(2, 3 * STEPS_PER_EPOCH + 1, 2))


class _CrashAtTrainingCall:
    """Cross entropy that raises on its ``n``-th call in training (a crash mid-epoch)."""

    def __init__(self, n: int) -> None:
        self.n, self.calls, self.loss = n, 0, nn.CrossEntropyLoss()

    def __call__(self, outputs, targets):
        if outputs.requires_grad:
            self.calls += 1
            if self.calls == self.n:
                raise RuntimeError("simulated crash")
        return self.loss(outputs, targets)


def test_mid_epoch_resume_replays_the_rest_of_the_epoch(tiny_dataset, tmp_path, continuous):
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(
            tiny_dataset,
            tmp_path,
            "run",
            n_epochs=3,
            criterion=_CrashAtTrainingCall(10),
            save_latest_freq=4,
        )
    assert torch.load(tmp_path / "run" / "latest.pth", weights_only=True)["step"] == 8
    _, _, status = read_run(tmp_path / "run")
    assert status["state"] == "failed"
    resumed = _fit(
        tiny_dataset, tmp_path, "run", n_epochs=3, continue_train=True, save_latest_freq=4
    )
    _assert_same_run(resumed, continuous)
    steps = raw_steps(tmp_path / "run", "train/loss")
    assert steps == list(range(2, 3 * STEPS_PER_EPOCH + 1, 2))  # no gap, no step twice


def test_continue_train_without_a_checkpoint_fails_clearly(tiny_dataset, tmp_path):
    with pytest.raises(UsageError, match="--continue-train: no checkpoint .*latest.pth"):
        _fit(tiny_dataset, tmp_path, "fresh", n_epochs=1, continue_train=True)


class _Crafted:
    """A validation "metric" that follows a given curve, one value per epoch."""

    def __init__(self, curve: list[float], batches_per_epoch: int) -> None:
        self.curve, self.batches, self.calls = curve, batches_per_epoch, 0

    def __call__(self, outputs, targets):
        value = self.curve[self.calls // self.batches]
        self.calls += 1
        return torch.full((len(targets),), value)


@pytest.mark.parametrize(
    "curve, patience, min_delta, stops_after, best_epoch",
    [
        ([1.0, 0.5, 0.6, 0.55, 0.7, 0.4], 2, 0.0, 4, 2),
        ([1.0, 0.95, 0.5, 0.4], 1, 0.1, 2, 1),
    ],
)
def test_early_stopping_on_a_crafted_validation_curve(
    tiny_dataset, tmp_path, curve, patience, min_delta, stops_after, best_epoch
):
    crafted = _Crafted(curve, batches_per_epoch=2)  # 12 validation images, batch 8
    result = _fit(
        tiny_dataset,
        tmp_path,
        "stop",
        n_epochs=len(curve),
        metrics={"crafted": crafted},
        monitor="crafted",
        patience=patience,
        min_delta=min_delta,
    )
    assert result.stopped_early and result.epochs_completed == stops_after
    assert (result.best_epoch, result.best_value) == (
        best_epoch,
        pytest.approx(curve[best_epoch - 1]),
    )
    assert torch.load(result.best_checkpoint, weights_only=True)["epoch"] == best_epoch
    assert result.values("metric/crafted") == pytest.approx(curve[:stops_after])


@pytest.mark.integration
def test_remote_false_shows_live_plots_in_a_visualizer_child(
    tiny_dataset, tmp_path, visdom_server, caplog
):
    caplog.set_level(logging.INFO, logger="trainer")
    _fit(
        tiny_dataset,
        tmp_path,
        "live",
        n_epochs=1,
        remote=False,
        display_server="127.0.0.1",
        display_port=visdom_server.endpoint.port,
        display_env="envx",
    )
    import requests  # with visdom, which visdom_server needs

    # The child drew the run, its last points included, before training returned.
    url = visdom_server.endpoint.url
    reply = requests.post(
        f"{url}/win_data", data=json.dumps({"win": "train", "eid": "envx"}), timeout=10
    )
    drawn = json.loads(reply.text)["content"]["data"][0]
    assert drawn["x"][-1] == STEPS_PER_EPOCH
    assert f"live plots at {url}" in caplog.text
    assert "live plots stopped with training" in caplog.text


def test_remote_true_starts_no_visualizer(tiny_dataset, tmp_path):
    _fit(tiny_dataset, tmp_path, "quiet", n_epochs=1, remote=True)
    assert not (tmp_path / "quiet" / "visualizer.log").exists()


def test_record_false_writes_no_store_and_no_checkpoints(tiny_dataset, tmp_path):
    result = _fit(tiny_dataset, tmp_path, "dry", n_epochs=1, record=False)
    assert result.latest_checkpoint is None and len(result.values("train/loss")) == 3
    assert (
        not (tmp_path / "dry" / "pickle").exists()
        and not (tmp_path / "dry" / "latest.pth").exists()
    )


def test_datasets_may_come_from_a_function(tiny_dataset, tmp_path):
    given = _fit(tiny_dataset, tmp_path, "given", n_epochs=1, record=False)
    built = _fit(
        tiny_dataset,
        tmp_path,
        "built",
        n_epochs=1,
        record=False,
        dataset_fn=functools.partial(load_datasets, tiny_dataset),
    )
    assert built.history["train/loss"] == given.history["train/loss"]
