"""Fixtures shared by the ``trainer.fit`` tests in one process and with ddp=True."""

from __future__ import annotations

import pytest

import trainer
from tests.fixtures.runs.fit import NUM_EPOCHS, catalyst_parts, regression_datasets


@pytest.fixture(scope="module")
def single_process_run(tmp_path_factory):
    """The tutorial in one process with batch 64 (shared by the tests comparing against it)."""
    model, criterion, optimizer, scheduler = catalyst_parts()
    out = tmp_path_factory.mktemp("single")
    result = trainer.fit(
        model,
        criterion,
        optimizer,
        datasets=regression_datasets(),
        batch_size=64,
        num_epochs=NUM_EPOCHS,
        scheduler=scheduler,
        checkpoints_dir=out,
        remote=True,
        name="linreg",
        device="cpu",
    )
    return result, model, optimizer, scheduler
