"""Data loaders whose order depends only on the seed and the epoch, so a resumed run replays exactly."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from run_core.launch_env import LaunchEnv

# Map-style datasets (with __len__ and __getitem__) by split name.
Datasets = Mapping[str, Any]
VALID_SPLITS = ("valid", "val")


class ResumableDistributedSampler(DistributedSampler[Any]):
    """A DistributedSampler that can start part way into an epoch (for mid-epoch resume).

    Its order depends only on (seed, epoch), so skipping the first
    ``start_index`` indices replays exactly the rest of an interrupted epoch.
    Rank ``r`` takes indices ``r, r + W, r + 2W, ...`` of the permutation, so the
    W batches of one step together are a contiguous slice of it: the same global
    batch that one process with W times the batch size would take.
    """

    start_index = 0

    def __iter__(self) -> Iterator[Any]:
        return itertools.islice(super().__iter__(), self.start_index, None)

    def __len__(self) -> int:
        return self.num_samples - self.start_index


class ShardSampler(Sampler[int]):
    """Indices ``rank, rank + W, ...`` without padding: every sample exactly once over all ranks."""

    def __init__(self, length: int, rank: int, world_size: int) -> None:
        self.indices = range(rank, length, world_size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


@dataclass
class Loaders:
    """The train and validation loaders of one process, and how to position the train loader."""

    train: DataLoader[Any]
    valid: DataLoader[Any] | None
    sampler: ResumableDistributedSampler
    generator: torch.Generator
    steps_per_epoch: int
    train_size: int
    batch_size: int
    seed: int
    rank: int

    def start_epoch(self, epoch: int, first_batch: int) -> None:
        """A new permutation for ``epoch`` (the same on all ranks), skipping ``first_batch`` batches."""
        self.sampler.set_epoch(epoch)
        self.sampler.start_index = first_batch * self.batch_size
        # Worker seeds come from this generator, not the global RNG, so a resumed
        # run draws the same global random numbers as an uninterrupted one.
        self.generator.manual_seed(self.seed * 100_003 + epoch * 1009 + self.rank)


def build_loaders(
    datasets: Datasets,
    batch_size: int,
    num_workers: int,
    seed: int,
    launch: LaunchEnv,
    pin_memory: bool,
) -> Loaders:
    """Loaders over this rank's share of ``datasets["train"]`` and ``datasets["valid"]``."""
    train = datasets["train"]
    valid = next((datasets[k] for k in VALID_SPLITS if k in datasets), None)
    sampler = ResumableDistributedSampler(
        train, num_replicas=launch.world_size, rank=launch.rank, shuffle=True, seed=seed
    )
    generator = torch.Generator()
    loader_args: dict[str, Any] = dict(
        batch_size=batch_size,
        num_workers=num_workers,
        pin_memory=pin_memory,
        persistent_workers=num_workers > 0,
    )
    valid_loader = None
    if valid is not None and len(valid) > 0:
        valid_loader = DataLoader(
            valid,
            sampler=ShardSampler(
                len(valid),
                launch.rank,
                launch.world_size,
            ),
            **loader_args,
        )
    return Loaders(
        train=DataLoader(train, sampler=sampler, generator=generator, **loader_args),
        valid=valid_loader,
        sampler=sampler,
        generator=generator,
        steps_per_epoch=math.ceil(sampler.num_samples / batch_size),
        train_size=len(train),
        batch_size=batch_size,
        seed=seed,
        rank=launch.rank,
    )
