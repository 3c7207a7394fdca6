"""W&B's "Track experiments" tutorial's table: images, predictions (0-d tensors), targets
and per-class scores (numpy floats), logged as one ``wandb.Table``; a text cell that is
markup, which the page must show as text.

The first argument names the wandb module to import: ``wandb`` or ``remote_train_monitor.wandb``.
"""

from __future__ import annotations

import importlib
import sys

import torch

wandb = importlib.import_module(sys.argv.pop(1))

run = wandb.init(project="p", name="n")
columns = ["image", "pred", "target", "note"] + [f"score_{i}" for i in range(3)]
table = wandb.Table(columns=columns)
generator = torch.Generator().manual_seed(0)
images = torch.rand(4, 1, 28, 28, generator=generator)
scores = torch.softmax(torch.rand(4, 3, generator=generator), 1)
for img, pred, target, prob in zip(images, scores.argmax(1), torch.tensor([0, 1, 2, 1]), scores):
    note = "<b>bold</b>" if int(target) == 1 else "plain"
    table.add_data(wandb.Image(img[0].numpy() * 255), pred, target, note, *prob.numpy())
run.log({"predictions_table": table}, commit=False)
run.log({"loss": 0.5})
run.finish()
