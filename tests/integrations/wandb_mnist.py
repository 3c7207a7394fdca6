"""A W&B training script as wandb's own examples write one (examples/pytorch/pytorch-cnn-mnist):
``wandb.init()``, ``wandb.config.update(args)``, ``wandb.watch(model)``, a log per batch and,
per epoch, a list of ``wandb.Image`` with the test accuracy and loss. Synthetic digits
stand in for MNIST (no download). The first argument names the wandb module to import:
``wandb`` or ``remote_train_monitor.wandb``; W&B's WANDB_DIR/PROJECT/NAME/MODE apply.
"""

from __future__ import annotations

import argparse
import importlib
import sys

import torch
from torch import nn
from torch.nn import functional

wandb = importlib.import_module(sys.argv.pop(1))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=5)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=5)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = functional.relu(functional.max_pool2d(self.conv1(x), 2))
        x = functional.relu(functional.max_pool2d(self.conv2(x), 2))
        return functional.log_softmax(self.fc(x.flatten(1)), dim=1)


def digits(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Images whose label is the row a bright bar sits in, plus noise."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (count,), generator=gen)
    images = torch.rand(count, 1, 28, 28, generator=gen) * 0.3
    for i, label in enumerate(labels.tolist()):
        images[i, 0, 2 * label + 4 : 2 * label + 6, 4:24] = 1.0
    return images, labels


def train(args, model, optimizer, data) -> None:
    model.train()
    images, labels = data
    for start in range(0, len(images), args.batch_size):
        optimizer.zero_grad()
        loss = functional.nll_loss(
            model(images[start : start + args.batch_size]), labels[start : start + args.batch_size]
        )
        loss.backward()
        optimizer.step()
        wandb.log({"batch_loss": loss.item()})


def test(model, data) -> None:
    model.eval()
    images, labels = data
    with torch.no_grad():
        output = model(images)
    test_loss = functional.nll_loss(output, labels, reduction="sum").item() / len(images)
    pred = output.argmax(1)
    correct = pred.eq(labels).sum().item()
    examples = [
        wandb.Image(images[i] * 255, caption=f"Pred: {pred[i].item()} Truth: {labels[i].item()}")
        for i in range(4)
    ]
    wandb.log(
        {
            "Examples": examples,
            "Test Accuracy": 100.0 * correct / len(images),
            "Test Loss": test_loss,
        }
    )


def main() -> None:
    wandb.init()
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--watch-log", default="gradients")  # wandb.watch's defaults
    parser.add_argument("--watch-log-freq", type=int, default=1000)
    args = parser.parse_args()
    wandb.config.update(args)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    wandb.watch(model, log=args.watch_log, log_freq=args.watch_log_freq)
    train_data, test_data = digits(128, args.seed), digits(64, args.seed + 1)
    for _epoch in range(1, args.epochs + 1):
        train(args, model, optimizer, train_data)
        test(model, test_data)


if __name__ == "__main__":
    main()
