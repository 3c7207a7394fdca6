"""Captioned images and a summary of text, dicts and lists, as W&B's docs log them.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

wandb = importlib.import_module(sys.argv.pop(1))

HOSTILE = "<img src=x onerror=alert(1)>"
run = wandb.init(config={"hyp": {"lr0": 0.01, "momentum": 0.9}, "img_size": [640, 640]})
pixels = np.full((8, 8, 3), 120, np.uint8)
wandb.log({"sample": wandb.Image(pixels, caption=f"a cat {HOSTILE}")})
wandb.log({"batch": [wandb.Image(pixels, caption=f"pred {i}") for i in range(3)]})
wandb.log({"loss": 0.25})
run.summary["best_model"] = "resnet"
run.summary["hostile"] = HOSTILE
run.summary["best"] = {"epoch": 3, "acc": 0.9}
run.summary["classes"] = ["cat", "dog"]
run.finish()
