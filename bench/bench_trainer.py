"""Trainer: step throughput beside a hand-written DDP loop, and remote logging on against off.

    python -m bench trainer

One torchrun job of 2 CPU processes (gloo) runs, in turns and in the same
processes (same warm caches, same model, data and batch size), one epoch each:

* reference: the torchrun tutorial's loop, DistributedSampler + DDP + SGD, no logging;
* ours, logging on: :func:`trainer.fit` as ``train --remote True`` runs it, the
  snapshot store written and every file handed to a transfer hook (a local copy);
* ours, logging off: the same loop with ``record=False`` (no store, no transfer).

Each variant's time per training epoch (validation and epoch-end checkpoints
excluded, as the reference has neither) is measured on rank 0. The machines
are shared and their load drifts within seconds, so the three variants run
back to back in each round (order alternating) and the ratios are medians of
the per-round ratios, not ratios of medians.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPROC = 2
BATCH_SIZE = 32  # per process
ROUNDS = 24
VARIANTS = ("reference", "logging_on", "logging_off")


# --- the worker (runs under torchrun) --------------------------------------------------------


def _reference_epoch(datasets, epoch: int, num_classes: int) -> float:
    """The tutorial's loop: nothing but sampler, DDP forward/backward and SGD."""
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler

    from trainer.command.models import SmallCNN

    torch.manual_seed(0)
    model = DDP(SmallCNN(num_classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sampler = DistributedSampler(datasets["train"], seed=0)
    loader = DataLoader(datasets["train"], batch_size=BATCH_SIZE, sampler=sampler)
    sampler.set_epoch(epoch)
    start = time.perf_counter()
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
    return time.perf_counter() - start


def _trainer_epoch(datasets, num_classes: int, checkpoints: Path, name: str, record: bool) -> float:
    """One epoch of our loop as ``train --remote True`` runs it (a prediction image included)."""
    import torch

    from trainer import fit
    from trainer.command.models import SmallCNN, accuracy, prediction_grid
    from trainer.training import loop

    epoch_times: list[float] = []
    run_epoch = loop.Trainer._run_epoch

    def timed_epoch(self: loop.Trainer, epoch: int) -> None:  # validation and checkpoints excluded
        start = time.perf_counter()
        run_epoch(self, epoch)
        epoch_times.append(time.perf_counter() - start)

    torch.manual_seed(0)
    model = SmallCNN(num_classes)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loop.Trainer._run_epoch = timed_epoch  # type: ignore[method-assign]
    try:
        fit(
            model,
            torch.nn.CrossEntropyLoss(),
            optimizer,
            datasets,
            batch_size=BATCH_SIZE,
            num_epochs=1,
            metrics={"accuracy": accuracy},
            checkpoints_dir=str(checkpoints),
            name=name,
            remote=True,
            remote_transfer_cmd="transfer_plugins.local.copy_to" if record else None,
            device="cpu",
            print_freq=10,
            display_freq=20,
            display_fn=prediction_grid,
            progress=False,
            record=record,
        )
    finally:
        loop.Trainer._run_epoch = run_epoch  # type: ignore[method-assign]
    return epoch_times[0]


def worker(dataroot: str, out: str) -> None:
    """One rank of the benchmark job; rank 0 writes the epoch times to ``out`` as JSON."""
    import logging

    import torch.distributed as dist

    from trainer.command.data import load_datasets

    logging.basicConfig(level=logging.WARNING)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    datasets = load_datasets(dataroot)
    for i in range(len(datasets["train"])):  # decode once: every variant reads warm caches
        datasets["train"][i]
    classes = len(datasets["train"].classes)
    checkpoints = Path(out).parent / "checkpoints"
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for round_ in range(ROUNDS):
        order = VARIANTS if round_ % 2 == 0 else VARIANTS[::-1]  # no variant always goes first
        for variant in order:
            if variant == "reference":
                seconds = _reference_epoch(datasets, round_, classes)
            else:
                seconds = _trainer_epoch(
                    datasets,
                    classes,
                    checkpoints,
                    f"{variant}_{round_}",
                    record=variant == "logging_on",
                )
            times[variant].append(seconds)
    if rank == 0:
        Path(out).write_text(json.dumps({"times": times, "train_size": len(datasets["train"])}))
    dist.destroy_process_group()


# --- the driver ------------------------------------------------------------------------------


def _measure(root: Path) -> dict:
    from trainer.command.data import make_dataset

    dataroot = root / "data"
    make_dataset(dataroot)  # the demo's dataset: 4 classes, 1,600 + 400 images of 32x32
    transfer_dir = root / "transferred"
    transfer_dir.mkdir()
    out = root / "times.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env.update(
        OMP_NUM_THREADS="1",
        TRANSFER_LOCAL_DIR=str(transfer_dir),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={NPROC}",
        "-m",
        "bench.bench_trainer",
        "--worker",
        str(dataroot),
        str(out),
    ]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(
            f"trainer benchmark job failed ({result.returncode}):\n{result.stderr[-3000:]}"
        )
    return json.loads(out.read_text())


def _paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def run() -> list[dict]:
    """Rows: our throughput beside the hand-written loop's, and logging on beside off."""
    with tempfile.TemporaryDirectory() as tmp:
        measured = _measure(Path(tmp))
    times = measured["times"]
    median = {v: statistics.median(t) for v, t in times.items()}
    samples = measured["train_size"]  # DistributedSampler: every sample once per epoch
    throughput_ratio = _paired_ratio(times["reference"], times["logging_on"])  # = ours / reference
    logging_ratio = _paired_ratio(times["logging_on"], times["logging_off"])
    setup = (
        f"{NPROC} CPU procs (gloo), SmallCNN 32x32, batch {BATCH_SIZE}/proc, {ROUNDS} paired epochs"
    )
    return [
        {
            "benchmark": f"trainer step throughput vs hand-written DDP loop ({setup})",
            "ours": f"{samples / median['logging_on']:.0f} samples/s",
            "reference": f"{samples / median['reference']:.0f} samples/s",
            "ratio": f"{throughput_ratio:.3f}x",
            "target": ">= 0.97x",
            "met": throughput_ratio >= 0.97,
        },
        {
            "benchmark": "trainer time per epoch, remote logging on (store + transfer hook) vs off",
            "ours": f"{median['logging_on'] * 1e3:.0f} ms",
            "reference": f"{median['logging_off'] * 1e3:.0f} ms",
            "ratio": f"{logging_ratio:.3f}x",
            "target": "<= 1.01x",
            "met": logging_ratio <= 1.01,
        },
    ]


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        from bench.__main__ import print_table

        print_table(run())
