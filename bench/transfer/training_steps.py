"""The CLI's training step, timed: what a transfer benchmark runs beside an upload."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path


class TrainingSteps:
    """The CLI's training step on one torch thread: next DataLoader batch, forward,
    cross-entropy, backward, Adam (as ``trainer.training.loop.Runner._run_batch``)."""

    def __init__(self, workdir: Path, batch_size: int = 64, image_size: int = 32) -> None:
        import torch
        from torch import nn
        from torch.utils.data import DataLoader

        from trainer.command.data import load_datasets, make_dataset
        from trainer.command.models import SmallCNN

        make_dataset(
            workdir / "shapes",
            classes=4,
            train_per_class=128,
            val_per_class=1,
            image_size=image_size,
            seed=0,
        )
        train = load_datasets(workdir / "shapes")["train"]
        self.loader = DataLoader(
            train,
            batch_size=batch_size,
            shuffle=True,
            drop_last=True,
            generator=torch.Generator().manual_seed(0),
        )
        torch.manual_seed(0)
        self.model = SmallCNN(num_classes=len(train.classes))
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.005)  # the CLI's default
        self._batches: Iterator = iter(())
        self.run_for(2.0)  # warm-up: decode and cache the images, allocator, kernels

    def step(self) -> float:
        """Seconds of one training step, data included."""
        started = time.perf_counter()
        try:
            inputs, targets = next(self._batches)
        except StopIteration:
            self._batches = iter(self.loader)
            inputs, targets = next(self._batches)
        loss = self.criterion(self.model(inputs), targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return time.perf_counter() - started

    def run_for(self, seconds: float) -> list[float]:
        end = time.perf_counter() + seconds
        times = []
        while time.perf_counter() < end:
            times.append(self.step())
        return times

    def run_until(self, done: Callable[[], bool], limit: float = 600.0) -> list[float]:
        end = time.perf_counter() + limit
        times = []
        while not done() and time.perf_counter() < end:
            times.append(self.step())
        return times
