"""Trackio's fake-training example, as W&B scripts write it: three runs in a loop, each
``wandb.init(project=, name=, config=)`` and 20 logged epochs, ``finish`` only at the end.

The first argument names the wandb module to import (``wandb`` or
``remote_train_monitor.wandb``); each further one is a ``reinit`` value the loop runs
with (``none``: not passed; ``true``/``false``: W&B's legacy booleans).
"""

from __future__ import annotations

import importlib
import math
import sys

wandb = importlib.import_module(sys.argv.pop(1))

EPOCHS = 20
REINIT = {"none": None, "true": True, "false": False}


def scheduler_callback(lr: float) -> None:
    """A library's hook that logs through the global run when there is one (as older W&B
    integrations do): W&B's ``create_new`` runs are not ``wandb.run``, so it logs nothing."""
    if wandb.run is not None:
        wandb.log({"lr": lr}, commit=False)


def fake_training(mode: str) -> None:
    """Trackio's loop; ``reinit`` passed as ``mode`` says."""
    reinit = REINIT.get(mode, mode)
    kwargs = {} if reinit is None else {"reinit": reinit}
    runs = []
    for index in range(3):
        run = wandb.init(
            project="fake-training",
            name=f"{mode}-run-{index}",
            config={"epochs": EPOCHS, "learning_rate": 0.001 * (index + 1), "batch_size": 64},
            **kwargs,
        )
        runs.append(run)
        # A run created beside others is not wandb.run (W&B's create_new): log through it.
        log = run.log if reinit == "create_new" else wandb.log
        for epoch in range(EPOCHS):
            loss = 2.5 * math.exp(-0.2 * epoch) + 0.1 * index
            scheduler_callback(0.001 * (index + 1) * 0.9**epoch)
            log({"train_loss": loss, "val_loss": loss * 1.1, "epoch": epoch})
    wandb.finish()
    for run in runs:  # those wandb.finish does not know (create_new's)
        run.finish()


for mode in sys.argv[1:]:
    fake_training(mode)
