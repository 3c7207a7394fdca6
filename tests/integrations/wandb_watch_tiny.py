"""``wandb.watch(model, log="all", log_freq=10)`` on a tiny model that logs its loss every
25 batches, as W&B's PyTorch notebook does: the hooks fire two or three times a step.

The first argument names the wandb module to import: ``wandb`` or
``remote_train_monitor.wandb``; W&B's WANDB_DIR/PROJECT/NAME/MODE apply.
"""

from __future__ import annotations

import importlib
import sys

import torch
from torch import nn
from torch.nn import functional

wandb = importlib.import_module(sys.argv.pop(1))

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, labels = torch.randn(600, 4), torch.randint(0, 3, (600,))
wandb.init()
wandb.watch(model, log="all", log_freq=10)
for batch in range(60):  # steps 0 and 1 log; step 2's 10 batches are left open at finish
    optimizer.zero_grad()
    rows = slice(10 * batch, 10 * batch + 10)
    loss = functional.cross_entropy(model(inputs[rows]), labels[rows])
    loss.backward()
    optimizer.step()
    if batch % 25 == 24:
        wandb.log({"loss": loss.item()})
wandb.finish()
