"""W&B's step and commit rules, summaries, media and alerts, in the calls W&B's docs show.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import sys

wandb = importlib.import_module(sys.argv.pop(1))

run = wandb.init(config={"lr": 0.1, "layers": [64, 32], "optimizer": {"name": "adam", "beta": 0.9}})
run.define_metric("val_loss", summary="min")
wandb.log({"a": 1.0})  # a step of its own: 0
wandb.log({"b": 2.0}, commit=False)  # step 1, kept open
wandb.log({"a": 3.0})  # also step 1, which it closes
wandb.log({"a": 4.0}, step=5)  # step 5, kept open
wandb.log({"c": 5.0}, step=5)  # also step 5
wandb.log({"a": 6.0}, step=3)  # below the current step: dropped
wandb.log({"d": 7.0})  # step 5, closed
wandb.log({"nested": {"x": 1.0, "y": 2.0}})  # step 6
for value in (3.0, 0.5, 2.0):  # steps 7, 8, 9; the summary keeps the minimum
    wandb.log({"val_loss": value})
wandb.log({"weights": wandb.Histogram([1.0, 2.0, 2.0, 3.0, 3.0, 3.0], num_bins=3)})
wandb.log({"note": "halfway"})
table = wandb.Table(columns=["epoch", "accuracy"])
table.add_data(1, 0.5)
table.add_data(2, 0.75)
wandb.log({"predictions": table})
run.summary["best_accuracy"] = 0.75
wandb.config.update({"epochs": 2})
wandb.alert(title="done", text="the loop ended", level=wandb.AlertLevel.WARN)
wandb.alert(title="done", text="again, within a minute: not sent")
run.finish()
