"""``trainer.fit`` in one process: the Catalyst tutorial's example and early stopping.

The same example with ddp=True, from a script, under torchrun and in a notebook is in
test_fit_ddp.py; bad input, caught before any worker starts, in test_checks.py."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import trainer
from snapshot_store import read_store
from tests.fixtures.runs.fit import (
    NUM_EPOCHS,
    NUM_SAMPLES,
    ScriptedValidation,
    check_store,
    scripted_datasets,
)
from visualizer.api import Api


def test_catalyst_example_in_one_process(single_process_run):
    result, model, optimizer, scheduler = single_process_run
    assert result.model is model
    assert result.epochs_completed == NUM_EPOCHS and not result.stopped_early
    assert result.global_step == math.ceil(NUM_SAMPLES / 64) * NUM_EPOCHS
    losses = result.values("val/loss")
    assert losses[-1] < losses[0]
    assert result.best_value == min(losses) and result.best_epoch == losses.index(min(losses)) + 1
    assert result.best_checkpoint.exists() and result.latest_checkpoint.exists()
    assert scheduler.last_epoch == NUM_EPOCHS
    check_store(result, steps_per_epoch=math.ceil(NUM_SAMPLES / 64))


def test_fits_checkpoints_are_artifacts_of_its_run(single_process_run):
    result, *_ = single_process_run
    logged = Api().run(str(result.run_dir)).logged_artifacts()
    assert {a.base_name for a in logged} == {"linreg-checkpoint"}
    assert [a.version for a in logged] == [f"v{i}" for i in range(len(logged))]
    assert "latest" in logged[-1].aliases and logged[-1].metadata["step"] == result.global_step
    best = [a for a in logged if "best" in a.aliases]
    assert len(best) == 1 and best[0].metadata["score"] == result.best_value


# --- early stopping -------------------------------------------------------------------------


def _fit_scripted(model, optimizer, tmp_path, name: str, **options):
    """10 epochs of batch 16 over the scripted curve, patience 2, in this process."""
    return trainer.fit(
        model,
        nn.MSELoss(),
        optimizer,
        datasets=scripted_datasets(),
        batch_size=16,
        num_epochs=10,
        patience=2,
        checkpoints_dir=tmp_path,
        remote=True,
        name=name,
        device="cpu",
        **options,
    )


def test_early_stopping_stops_at_the_expected_epoch(tmp_path):
    """Best at epoch 4; epochs 5 and 6 improve by less than min_delta; patience 2 stops after 6."""
    torch.manual_seed(0)
    model = ScriptedValidation()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    result = _fit_scripted(model, optimizer, tmp_path, "early", min_delta=0.01)
    assert result.stopped_early
    assert result.epochs_completed == 6
    assert result.best_epoch == 4 and result.best_value == pytest.approx(0.5)
    assert result.values("val/loss") == pytest.approx(ScriptedValidation.VAL_CURVE[:6])
    history, _, update = read_store(tmp_path / "early" / "pickle")
    assert len(history.series(("val", "loss"))[0]) == 6
    assert update.status["stopped_early"] is True


def test_without_min_delta_small_improvements_count(tmp_path):
    model = ScriptedValidation()
    result = _fit_scripted(model, torch.optim.SGD(model.parameters(), lr=0.1), tmp_path, "early0")
    assert not result.stopped_early and result.epochs_completed == 10
    assert result.best_epoch == 10
