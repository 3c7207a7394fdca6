"""Two runs for W&B's "Import and export data" read snippets: ints, floats, text, nested
config, a summary set by hand, the second run made first by name order and renamed.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import sys

wandb = importlib.import_module(sys.argv.pop(1))

for name, lr in (("zeta", 0.1), ("alpha", 0.01)):  # made zeta first: not name order
    run = wandb.init(
        project="export", name=name, config={"lr": lr, "epochs": 3, "opt": {"name": "adam"}}
    )
    for epoch in range(3):
        run.log({"loss": lr / (epoch + 1), "count": 523 + epoch, "acc": 0.5, "whole": 2.0})
    run.summary["best"] = 7
    if name == "alpha":
        run.name = "alpha-renamed"
    run.finish()
