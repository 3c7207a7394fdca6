"""nanoGPT's ``train.py`` W&B path, in its shape: module-level settings, the config as every
plain setting (``isinstance(v, (int, float, bool, str))``), a warmup-then-cosine learning
rate, and at each eval interval one ``wandb.log`` of ``iter``, ``train/loss`` and
``val/loss`` (0-d tensors, as its ``estimate_loss`` returns them), ``lr`` and ``mfu`` (-100
until measured). A bigram model on a fixed text stands in for GPT (no download, CPU, a
few seconds). The first argument names the wandb module to import.
"""

from __future__ import annotations

import importlib
import math
import sys

import torch
from torch import nn
from torch.nn import functional

wandb = importlib.import_module(sys.argv.pop(1))

# settings, as train.py keeps them: plain module globals, overridable from the command line
out_dir = "out"
eval_interval = 5
eval_iters = 4
wandb_log = True
wandb_project = "owt"
wandb_run_name = "gpt2"
dataset = "shakespeare_char"
batch_size = 8
block_size = 16
learning_rate = 1e-2
max_iters = 30
warmup_iters = 5
lr_decay_iters = 30
min_lr = 1e-3
decay_lr = True
device = "cpu"
config_keys = [
    k
    for k, v in globals().items()
    if not k.startswith("_") and isinstance(v, int | float | bool | str)
]
for arg in sys.argv[1:]:  # train.py's configurator: --key=value
    key, _, value = arg.removeprefix("--").partition("=")
    globals()[key] = type(globals()[key])(value)
config = {k: globals()[k] for k in config_keys}

TEXT = "first citizen: before we proceed any further, hear me speak. " * 40
chars = sorted(set(TEXT))
data = torch.tensor([chars.index(c) for c in TEXT], dtype=torch.long)
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]
torch.manual_seed(1337)
torch.set_num_threads(1)


def get_batch(which: str) -> tuple[torch.Tensor, torch.Tensor]:
    source = train_data if which == "train" else val_data
    starts = torch.randint(len(source) - block_size, (batch_size,))
    x = torch.stack([source[i : i + block_size] for i in starts])
    y = torch.stack([source[i + 1 : i + 1 + block_size] for i in starts])
    return x, y


class Bigram(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = self.table(x)
        return functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


@torch.no_grad()
def estimate_loss(model: nn.Module) -> dict[str, torch.Tensor]:
    model.eval()
    out = {}
    for which in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            losses[k] = model(*get_batch(which)).item()
        out[which] = losses.mean()
    model.train()
    return out


def get_lr(it: int) -> float:
    """Linear warmup, then cosine decay to ``min_lr``, then ``min_lr``."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


model = Bigram(len(chars))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
if wandb_log:
    wandb.init(project=wandb_project, name=wandb_run_name, config=config)
running_mfu = -1.0
for iter_num in range(max_iters + 1):
    lr = get_lr(iter_num) if decay_lr else learning_rate
    for group in optimizer.param_groups:
        group["lr"] = lr
    if iter_num % eval_interval == 0:
        losses = estimate_loss(model)
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if wandb_log:
            wandb.log(
                {
                    "iter": iter_num,
                    "train/loss": losses["train"],
                    "val/loss": losses["val"],
                    "lr": lr,
                    "mfu": running_mfu * 100,
                }
            )
    loss = model(*get_batch("train"))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if iter_num >= 5:  # train.py measures mfu after a few iterations
        running_mfu = 0.01 if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * 0.01
if wandb_log:
    wandb.finish()
