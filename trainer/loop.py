"""The project's one training loop, behind both ``python -m trainer train`` and ``fit(...)``.

It runs in whatever process group :mod:`trainer.distributed` finds (a single
process, DataParallel, or one DDP rank among many) and keeps the plots honest:

* the train loss is a sum and a count per rank, all-reduced only at print steps,
  so each point is the mean over every sample of the interval on every rank;
* validation runs on a padding-free shard per rank and all-reduces sums and
  counts, so its loss and metrics are exact over the whole validation set;
* only global rank 0 records (the snapshot store), logs and saves checkpoints.

A worker function (``trainer.spawn``, a notebook, a user's script under
torchrun) builds its model, loss and optimizer and calls :func:`fit`.
"""

from __future__ import annotations

import gc
import itertools
import logging
import math
import os
import signal
import socket
import time
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler

from snapshot_store import Recorder

from . import checkpoint, distributed
from .distributed import DistEnv

log = logging.getLogger(__name__)
_pkg_log = logging.getLogger("trainer")

Datasets = Mapping[str, Dataset]
Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
AMP_DTYPES = {"off": None, "bf16": torch.bfloat16, "fp16": torch.float16}
LATEST, BEST = "latest.pth", "best.pth"
LOSS_LOG = "loss_log.txt"
# Test hook for the elastic-restart test: this rank kills itself (SIGKILL) before
# this global step, in the first attempt of a torchrun worker group only.
CRASH_AT_STEP_ENV, CRASH_RANK_ENV = "TRAINER_TEST_CRASH_AT_STEP", "TRAINER_TEST_CRASH_RANK"


@dataclass
class FitResult:
    """What a finished (or early-stopped) run leaves: identical on every rank but the model device."""

    model: nn.Module
    history: dict[str, list[tuple[int, float, float]]]  # "group/name" -> [(step, epoch, value)]
    best_value: float | None
    best_epoch: int | None  # 1-based number of the epoch that gave best_value
    best_checkpoint: Path | None
    latest_checkpoint: Path | None
    run_dir: Path
    epochs_completed: int
    global_step: int
    stopped_early: bool = False

    def values(self, key: str) -> list[float]:
        """The recorded values of ``"group/name"`` (e.g. ``"val/loss"``) in step order."""
        return [value for _, _, value in self.history.get(key, [])]


@contextmanager
def _log_through_tqdm() -> Iterator[None]:
    """Send console log lines through ``tqdm.write`` so they do not tear the progress bar."""
    from tqdm.contrib.logging import _is_console_logging_handler, logging_redirect_tqdm

    loggers = [lg for lg in (logging.getLogger(), _pkg_log)
               if any(_is_console_logging_handler(h) for h in lg.handlers)]
    with logging_redirect_tqdm(loggers) if loggers else nullcontext():
        yield


def scale_lr(lr: float, world_size: int, rule: str = "none") -> float:
    """The learning rate for ``world_size`` processes: ``none``, ``linear`` or ``sqrt`` scaling."""
    if rule == "linear":
        return lr * world_size
    if rule == "sqrt":
        return lr * math.sqrt(world_size)
    if rule != "none":
        raise ValueError(f"lr scaling must be none, linear or sqrt, not {rule!r}")
    return lr


class ResumableDistributedSampler(DistributedSampler):
    """A DistributedSampler that can start part way into an epoch (for mid-epoch resume).

    Its order depends only on (seed, epoch), so skipping the first
    ``start_index`` indices replays exactly the rest of an interrupted epoch.
    Rank ``r`` takes indices ``r, r + W, r + 2W, ...`` of the permutation, so the
    W batches of one step together are a contiguous slice of it: the same global
    batch that one process with W times the batch size would take.
    """

    start_index = 0

    def __iter__(self) -> Iterator[int]:
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


class Runner:
    """Trains one model; :meth:`fit` is the whole run. See :func:`fit` for the arguments."""

    def __init__(
        self,
        model: nn.Module,
        criterion: Callable[[Any, Any], torch.Tensor],
        optimizer: torch.optim.Optimizer,
        datasets: Datasets | Callable[[], Datasets],
        *,
        batch_size: int,
        n_epochs: int,
        scheduler: Any = None,
        metrics: Mapping[str, Metric] | None = None,
        patience: int | None = None,
        min_delta: float = 0.0,
        monitor: str = "loss",
        mode: str = "min",
        checkpoints_dir: str | os.PathLike[str] = "./checkpoints",
        name: str = "experiment",
        remote: bool = False,
        remote_transfer_cmd: str | None = None,
        device: str | torch.device | Sequence[int] | None = None,
        continue_train: bool = False,
        print_freq: int = 10,
        display_freq: int = 100,
        save_epoch_freq: int = 5,
        save_latest_freq: int = 0,
        amp: str = "off",
        seed: int = 0,
        num_workers: int = 0,
        display_fn: Callable[[Any, Any, Any], torch.Tensor] | None = None,
        display_server: str = "http://localhost",
        display_port: int = 8097,
        display_env: str | None = None,
        options: Mapping[str, Any] | None = None,
        progress: bool | None = None,
        record: bool = True,
        env: DistEnv | None = None,
    ) -> None:
        if batch_size < 1 or n_epochs < 1:
            raise ValueError(f"batch_size and n_epochs must be >= 1 (got {batch_size}, {n_epochs})")
        if amp not in AMP_DTYPES:
            raise ValueError(f"amp must be one of {sorted(AMP_DTYPES)}, not {amp!r}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', not {mode!r}")
        self.model, self.criterion, self.optimizer = model, criterion, optimizer
        self.scheduler = scheduler
        self.datasets = datasets
        self.metrics = dict(metrics or {})
        self.batch_size, self.n_epochs = batch_size, n_epochs
        self.patience, self.min_delta, self.monitor, self.mode = patience, min_delta, monitor, mode
        self.run_dir = Path(checkpoints_dir) / name
        self.name = name
        self.remote, self.remote_transfer_cmd = remote, remote_transfer_cmd or None
        self.gpu_ids = distributed.parse_device(device)
        self.continue_train = continue_train
        self.print_freq, self.display_freq = max(1, print_freq), display_freq
        self.save_epoch_freq, self.save_latest_freq = save_epoch_freq, save_latest_freq
        self.amp, self.seed, self.num_workers = amp, seed, num_workers
        self.display_fn = display_fn
        self.display = (display_server, display_port, display_env or name)
        self.options = dict(options) if options is not None else self._default_options()
        self.progress, self.record = progress, record
        self.env = env

        # Run state, all of it saved in a checkpoint.
        self.epoch = 0  # epochs completed
        self.step = 0  # optimizer steps taken (the x axis of every plot)
        self.batch_in_epoch = 0  # batches done in the current epoch
        self.best_value: float | None = None
        self.best_epoch: int | None = None
        self.bad_epochs = 0
        self.history: dict[str, list[tuple[int, float, float]]] = {}
        self.stopped_early = False
        self._saved: dict[str, Path] = {}

    # --- the run ---------------------------------------------------------------------------

    def fit(self) -> FitResult:
        """Train for ``n_epochs`` (or until early stopping) and return the result on every rank."""
        with self._setup():
            self._prepare_data()
            self._prepare_model()
            self._resume_if_asked()
            self._wrap_model()
            self._announce()
            for epoch in range(self.epoch, self.n_epochs):
                self._run_epoch(epoch)
                scores = self._validate(epoch)
                self._step_scheduler(scores)
                improved = self._track_best(epoch, scores)
                self._save_epoch_snapshots(epoch, improved)
                if self._should_stop():
                    self.stopped_early = True
                    log.info("early stopping: no %s improvement of more than %g for %d epochs "
                             "(best %.4f at epoch %d)", self.monitor, self.min_delta,
                             self.bad_epochs, self.best_value, self.best_epoch)
                    break
        return self._result()

    # --- setup and teardown ----------------------------------------------------------------

    @contextmanager
    def _setup(self) -> Iterator[None]:
        """The run's context; everything that can fail on bad input fails before the process group."""
        self.env = self.env or distributed.detect()
        self.master = self.env.master_process
        self.devices = distributed.select_devices(self.gpu_ids, self.env)
        self.device = self.devices.device
        if self.amp == "fp16" and self.device.type != "cuda":
            raise ValueError("amp fp16 needs a GPU; use amp='bf16' or 'off' on the CPU")
        self._crash_step = self._crash_hook()
        self.recorder = self._open_recorder()  # resolves and preflights the transfer hook
        with ExitStack() as stack:
            self._live, self._outcome = None, "failed"
            stack.callback(self._close_outputs)
            stack.enter_context(self._run_logging())
            if distributed.init_process_group(self.env, self.devices):
                stack.push(self._leave_process_group)
            self.hosts = sorted(set(distributed.all_gather_objects(socket.gethostname())))
            self._live = self._start_live_plots()
            # A distinct stream per rank for dropout/augmentation; model init was the caller's.
            checkpoint.seed_everything(self.seed + self.env.rank)
            if self.master and self.progress is not False:
                stack.enter_context(_log_through_tqdm())
            yield
            self._outcome = "finished"

    def _leave_process_group(self, exc_type, exc, tb) -> None:
        """Free the DDP wrapper and meet every rank before the group goes.

        Freeing DDP (and the gloo work it holds) after the group is gone can
        deadlock in torch 2.13: gloo's destructor waits, holding the GIL, on a
        thread that needs the GIL. Freed while the group lives, after a barrier,
        that cleanup has finished first. No barrier after a failure: peers may be gone.
        """
        self.net = self.eval_net = None
        gc.collect()
        if exc_type is None:
            distributed.barrier()
        distributed.destroy_process_group()

    def _open_recorder(self) -> Recorder:
        rank = self.env.rank if self.record else -1  # a non-zero rank records nothing
        return Recorder(self.run_dir / "pickle", options=checkpoint.plain(self.options),
                        world_size=self.env.world_size, hosts=[socket.gethostname()],
                        transfer=self.remote_transfer_cmd, rank=rank)

    def _close_outputs(self) -> None:
        self.recorder.set_status(epochs_completed=self.epoch, stopped_early=self.stopped_early)
        if (self.run_dir / LOSS_LOG).exists():
            self.recorder.transfer_file(self.run_dir / LOSS_LOG)  # complete now: its final copy
        self.recorder.close(self._outcome)
        if self._live is not None and hasattr(self._live, "stop"):
            self._live.stop()  # after close: the follower has shown the last points
            log.info("live plots stopped with training; to view this run again: "
                     "python run_visualizer_local.py --pickle_dir %s", self.run_dir / "pickle")

    @contextmanager
    def _run_logging(self) -> Iterator[None]:
        """Rank 0 logs to the console and ``loss_log.txt``; other ranks only log errors."""
        previous_level = _pkg_log.level
        handlers: list[logging.Handler] = []
        if self.master:
            _pkg_log.setLevel(logging.INFO)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            to_file = logging.FileHandler(self.run_dir / LOSS_LOG, encoding="utf-8")
            to_file.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
            handlers.append(to_file)
            if not logging.getLogger().handlers:  # a library call with no logging configured
                handlers.append(logging.StreamHandler())
        else:
            _pkg_log.setLevel(logging.ERROR)
        for handler in handlers:
            _pkg_log.addHandler(handler)
        try:
            yield
        finally:
            for handler in handlers:
                _pkg_log.removeHandler(handler)
                handler.close()
            _pkg_log.setLevel(previous_level)

    def _start_live_plots(self) -> Any:
        """``remote=False``: follow the store into visdom from this process (rank 0)."""
        if self.remote or not self.master or not self.record:
            return None
        try:
            from visualizer.live import start_live
        except ImportError:
            log.info("live plots need the visualizer package (visualizer.live); meanwhile run: "
                     "python run_visualizer_local.py --pickle_dir %s", self.run_dir / "pickle")
            return None
        server, port, env = self.display
        host = urlsplit(server).hostname if "://" in server else server  # DeepLIIF passes a URL
        try:
            return start_live(str(self.run_dir / "pickle"), host or "localhost", port, env)
        except Exception as err:  # plots are a convenience; training goes on without them
            log.warning("live plots unavailable (%s); the store is still written", err)
            return None

    def _crash_hook(self) -> int | None:
        step = os.environ.get(CRASH_AT_STEP_ENV)
        if not step or self.env.restart_count > 0:
            return None
        if self.env.rank != int(os.environ.get(CRASH_RANK_ENV, "1")):
            return None
        return int(step)

    # --- data and model --------------------------------------------------------------------

    def _prepare_data(self) -> None:
        datasets = self.datasets() if callable(self.datasets) else self.datasets
        if "train" not in datasets:
            raise ValueError(f"datasets need a 'train' split; got {sorted(datasets)}")
        train, valid = datasets["train"], datasets.get("valid", datasets.get("val"))
        world, rank = self.env.world_size, self.env.rank
        self.train_sampler = ResumableDistributedSampler(
            train, num_replicas=world, rank=rank, shuffle=True, seed=self.seed)
        # Worker seeds come from this generator, not the global RNG, so a resumed
        # run draws the same global random numbers as an uninterrupted one.
        self._loader_generator = torch.Generator()
        loader_args = dict(batch_size=self.batch_size, num_workers=self.num_workers,
                           pin_memory=self.device.type == "cuda",
                           persistent_workers=self.num_workers > 0)
        self.train_loader = DataLoader(train, sampler=self.train_sampler,
                                       generator=self._loader_generator, **loader_args)
        self.valid_loader = None
        if valid is not None and len(valid) > 0:
            self.valid_loader = DataLoader(valid, sampler=ShardSampler(len(valid), rank, world),
                                           **loader_args)
        self.steps_per_epoch = math.ceil(self.train_sampler.num_samples / self.batch_size)
        self.train_size = len(train)

    def _prepare_model(self) -> None:
        self.raw_model = self.model.to(self.device)
        amp_dtype = AMP_DTYPES[self.amp]
        self.autocast = (
            (lambda: torch.autocast(self.device.type, dtype=amp_dtype)) if amp_dtype else nullcontext
        )
        self.scaler = torch.amp.GradScaler(self.device.type) if self.amp == "fp16" else None
        self._loss_sum = torch.zeros((), device=self.device)
        self._seen = 0

    def _wrap_model(self) -> None:
        if self.env.distributed:  # DDP broadcasts rank 0's (possibly resumed) weights here
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net: nn.Module = DistributedDataParallel(self.raw_model, device_ids=ids)
        elif self.devices.data_parallel_ids:
            self.net = nn.DataParallel(self.raw_model, device_ids=list(self.devices.data_parallel_ids))
        else:
            self.net = self.raw_model
        # DDP's own forward would expect every rank to run the same number of
        # batches; validation shards differ in length, so evaluate the bare module.
        self.eval_net = self.raw_model if self.env.distributed else self.net

    def _announce(self) -> None:
        world = self.env.world_size
        effective = self.batch_size * world
        total_steps = self.step + (self.n_epochs - self.epoch) * self.steps_per_epoch - self.batch_in_epoch
        where = f"{self.device}" + (f" (DataParallel over GPUs {list(self.devices.data_parallel_ids)})"
                                    if self.devices.data_parallel_ids else "")
        log.info("run %s: %d process(es) (%s launch) on %s; batch size %d per process, effective "
                 "batch size %d; %d training samples, %d steps per epoch, %d epochs (%d steps)",
                 self.run_dir, world, self.env.launcher, where, self.batch_size, effective,
                 self.train_size, self.steps_per_epoch, self.n_epochs, total_steps)
        self.recorder.set_status(total_steps=total_steps, steps_per_epoch=self.steps_per_epoch,
                                 n_epochs=self.n_epochs, world_size=world, hosts=self.hosts,
                                 effective_batch_size=effective)

    # --- training --------------------------------------------------------------------------

    def _run_epoch(self, epoch: int) -> None:
        self.net.train()
        start = self.batch_in_epoch  # > 0 only when resuming mid-epoch
        self.train_sampler.set_epoch(epoch)  # a new permutation each epoch, the same on all ranks
        self.train_sampler.start_index = start * self.batch_size
        self._loader_generator.manual_seed(self.seed * 100_003 + epoch * 1009 + self.env.rank)
        bar = self._progress_bar(epoch, start)
        self._interval_start = time.perf_counter()
        for batch_index, (inputs, targets) in enumerate(self.train_loader, start=start):
            if self._crash_step is not None and self.step + 1 == self._crash_step:
                os.kill(os.getpid(), signal.SIGKILL)
            outputs = self._run_batch(inputs, targets)
            self.step += 1
            self.batch_in_epoch = batch_index + 1
            progress = epoch + self.batch_in_epoch / self.steps_per_epoch
            end_of_epoch = self.batch_in_epoch == self.steps_per_epoch
            if self.step % self.print_freq == 0 or end_of_epoch:
                self._log_train(progress, bar)
            if self.display_fn and self.master and self.display_freq and self.step % self.display_freq == 0:
                self._log_images(inputs, targets, outputs, progress)
            if self.save_latest_freq and self.step % self.save_latest_freq == 0 and not end_of_epoch:
                if self._seen:
                    self._log_train(progress, bar)  # checkpoints fall on interval boundaries
                self._save_snapshot(LATEST)
                self._interval_start = time.perf_counter()
            bar.update()
        bar.close()
        self.epoch, self.batch_in_epoch = epoch + 1, 0

    def _run_batch(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        inputs = inputs.to(self.device, non_blocking=True)
        targets = targets.to(self.device, non_blocking=True)
        with self.autocast():
            outputs = self.net(inputs)
            loss = self.criterion(outputs, targets)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        # Kept on the device: no sync per step; summed across ranks at print steps.
        self._loss_sum += loss.detach().float() * len(targets)
        self._seen += len(targets)
        return outputs

    def _log_train(self, progress: float, bar: Any) -> None:
        """Record the train loss of the interval, averaged over its samples on all ranks."""
        totals = torch.stack([self._loss_sum, torch.tensor(float(self._seen), device=self.device)])
        loss_sum, seen = distributed.all_reduce_sum(totals).tolist()
        elapsed = max(time.perf_counter() - self._interval_start, 1e-9)
        loss, throughput = loss_sum / seen, seen / elapsed
        self._loss_sum.zero_()
        self._seen = 0
        self._interval_start = time.perf_counter()
        lrs = {f"lr{i}" if i else "lr": group["lr"] for i, group in enumerate(self.optimizer.param_groups)}
        self._record("train", {"loss": loss}, progress)
        self._record("lr", lrs, progress)
        self._record("throughput", {"samples_per_s": throughput}, progress)
        bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        log.info("(epoch %.2f, step %d, lr %.3g, %.0f samples/s) loss %.4f",
                 progress, self.step, lrs["lr"], throughput, loss)

    def _log_images(self, inputs: Any, targets: Any, outputs: Any, progress: float) -> None:
        grid = self.display_fn(inputs, targets, outputs)
        self.recorder.log_image("predictions", grid, self.step, epoch=progress, dataformats="NCHW")

    def _record(self, group: str, values: Mapping[str, float], progress: float) -> None:
        for name, value in values.items():
            self.history.setdefault(f"{group}/{name}", []).append((self.step, progress, float(value)))
        self.recorder.log(values, step=self.step, epoch=progress, group=group)

    def _progress_bar(self, epoch: int, start: int) -> Any:
        from tqdm import tqdm

        if not self.master or self.progress is False:
            disable: bool | None = True
        else:
            disable = None if self.progress is None else False  # None: tqdm shows it on a terminal only
        return tqdm(total=self.steps_per_epoch, initial=start, desc=f"epoch {epoch + 1}/{self.n_epochs}",
                    disable=disable, unit="step", leave=False, dynamic_ncols=True)

    # --- validation, schedule, early stopping ------------------------------------------------

    @torch.no_grad()
    def _validate(self, epoch: int) -> dict[str, float] | None:
        """Loss and metrics over the whole validation set (every rank's shard, summed)."""
        if self.valid_loader is None:
            return None
        self.eval_net.eval()
        sums = torch.zeros(2 + len(self.metrics), dtype=torch.float64, device=self.device)
        for inputs, targets in self.valid_loader:
            inputs = inputs.to(self.device, non_blocking=True)
            targets = targets.to(self.device, non_blocking=True)
            with self.autocast():
                outputs = self.eval_net(inputs)
                loss = self.criterion(outputs, targets)
            sums[0] += len(targets)
            sums[1] += loss.double() * len(targets)  # criterion returns the batch mean
            for i, metric in enumerate(self.metrics.values()):
                sums[2 + i] += metric(outputs, targets).double().sum()
        count, *totals = distributed.all_reduce_sum(sums).tolist()
        scores = dict(zip(["loss", *self.metrics], (t / max(count, 1) for t in totals)))
        self._record("val", {"loss": scores["loss"]}, float(epoch + 1))
        if self.metrics:
            self._record("metric", {k: scores[k] for k in self.metrics}, float(epoch + 1))
        log.info("epoch %d validation (%d samples): %s", epoch + 1, int(count),
                 ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
        return scores

    def _step_scheduler(self, scores: dict[str, float] | None) -> None:
        if self.scheduler is None:
            return
        if isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            if scores is not None:
                self.scheduler.step(scores[self.monitor])
        else:
            self.scheduler.step()

    def _track_best(self, epoch: int, scores: dict[str, float] | None) -> bool:
        if scores is None:
            return False
        if self.monitor not in scores:
            raise KeyError(f"monitor {self.monitor!r} is not among the validation scores {sorted(scores)}")
        value = scores[self.monitor]
        if self.best_value is None:
            better = True
        elif self.mode == "min":
            better = value < self.best_value - self.min_delta
        else:
            better = value > self.best_value + self.min_delta
        if better:
            self.best_value, self.best_epoch, self.bad_epochs = value, epoch + 1, 0
        else:
            self.bad_epochs += 1
        return better

    def _should_stop(self) -> bool:
        return bool(self.patience) and self.bad_epochs >= self.patience

    # --- checkpoints -----------------------------------------------------------------------

    def _save_epoch_snapshots(self, epoch: int, improved: bool) -> None:
        self._save_snapshot(LATEST)
        if self.master and (self.run_dir / LOSS_LOG).exists():
            # Once an epoch, not per line: each send copies the whole growing file.
            self.recorder.transfer_file(self.run_dir / LOSS_LOG, closed=False)
        if self.save_epoch_freq and (epoch + 1) % self.save_epoch_freq == 0:
            self._save_snapshot(f"epoch_{epoch + 1}.pth")
        if improved:
            self._save_snapshot(BEST)

    def _save_snapshot(self, filename: str) -> None:
        """Rank 0 writes the full run state atomically; every rank takes part (RNG gather)."""
        rng_states = distributed.all_gather_objects(checkpoint.rng_state())
        if not self.record:
            return
        self._saved[filename] = self.run_dir / filename
        if not self.master:
            return
        state = {
            "model": self.raw_model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "step": self.step,
            "world_size": self.env.world_size,
            "batch_size": self.batch_size,
            "rng": rng_states,
            "early_stopping": {"best_value": self.best_value, "best_epoch": self.best_epoch,
                               "bad_epochs": self.bad_epochs},
            "history": {k: [list(p) for p in v] for k, v in self.history.items()},
            "options": checkpoint.plain(self.options),
        }
        self.recorder.flush()  # points up to this step are on disk before the checkpoint says so
        self.recorder.save_checkpoint(state, filename)

    def _resume_if_asked(self) -> None:
        restarted = self.env.restart_count > 0
        if not (self.continue_train or restarted):
            return
        path = self.run_dir / LATEST
        found = torch.tensor([float(path.exists()), 1.0])
        seen_by, world = (int(v) for v in distributed.all_reduce_sum(found).tolist())
        if 0 < seen_by < world:
            raise RuntimeError(f"{path} is visible on {seen_by} of {world} ranks; the checkpoints "
                               "dir must be on a filesystem all nodes share")
        if not seen_by:
            if self.continue_train:
                raise FileNotFoundError(f"continue_train: no checkpoint {path} to resume from")
            log.info("restart %d: no checkpoint yet, starting from scratch", self.env.restart_count)
            return
        state = checkpoint.load(path)
        self.raw_model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None and state["scaler"] is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.epoch, self.step = state["epoch"], state["step"]
        stopping = state["early_stopping"]
        self.best_value, self.best_epoch = stopping["best_value"], stopping["best_epoch"]
        self.bad_epochs = stopping["bad_epochs"]
        self.history = {k: [tuple(p) for p in v] for k, v in state["history"].items()}
        for name in (LATEST, BEST):
            if (self.run_dir / name).exists():
                self._saved[name] = self.run_dir / name
        same_layout = (state["world_size"], state["batch_size"]) == (self.env.world_size, self.batch_size)
        if same_layout:
            self.batch_in_epoch = state["batch_in_epoch"]
            checkpoint.set_rng_state(state["rng"][self.env.rank])
        elif state["batch_in_epoch"]:
            log.warning("resuming with %d process(es) x batch %d instead of %d x %d: epoch %d "
                        "restarts from its first batch", self.env.world_size, self.batch_size,
                        state["world_size"], state["batch_size"], self.epoch + 1)
        why = f"restart {self.env.restart_count} of the worker group" if restarted else "continue_train"
        log.info("%s: resumed from %s at epoch %d, step %d", why, path,
                 self.epoch + (1 if self.batch_in_epoch else 0), self.step)

    def _result(self) -> FitResult:
        return FitResult(
            model=self.raw_model, history=self.history, best_value=self.best_value,
            best_epoch=self.best_epoch, best_checkpoint=self._saved.get(BEST), latest_checkpoint=self._saved.get(LATEST),
            run_dir=self.run_dir, epochs_completed=self.epoch, global_step=self.step,
            stopped_early=self.stopped_early,
        )

    def _default_options(self) -> dict[str, Any]:
        return {"name": self.name, "batch_size": self.batch_size, "n_epochs": self.n_epochs,
                "optimizer": type(self.optimizer).__name__,
                "lr": self.optimizer.param_groups[0].get("lr"),
                "scheduler": type(self.scheduler).__name__ if self.scheduler else None,
                "patience": self.patience, "min_delta": self.min_delta, "amp": self.amp,
                "seed": self.seed, "remote": self.remote,
                "remote_transfer_cmd": self.remote_transfer_cmd}


def fit(model: nn.Module, criterion: Callable[[Any, Any], torch.Tensor],
        optimizer: torch.optim.Optimizer, datasets: Datasets | Callable[[], Datasets],
        **kwargs: Any) -> FitResult:
    """Train ``model`` on ``datasets["train"]``, validating on ``datasets["valid"]`` each epoch.

    Run in one process, or in each process of a torchrun / Slurm / Kubernetes job
    (the process group is joined, or created from the launcher's variables).

    Args:
        model: built identically on every rank (seed before building it).
        criterion: ``criterion(outputs, targets)`` returning the batch mean.
        optimizer: over ``model``'s parameters.
        datasets: ``{"train": ds, "valid": ds}`` of ``(input, target)`` pairs, or a
            function returning that, called once in this process.
        batch_size: per process; the effective batch is ``batch_size * world_size``.
        n_epochs: epochs to train (in total, counting those of a resumed run).
        scheduler: stepped once per epoch (``ReduceLROnPlateau`` with the monitored score).
        metrics: ``name -> fn(outputs, targets)`` giving a per-sample tensor, averaged
            exactly over the validation set.
        patience, min_delta, monitor, mode: early stopping on a validation score
            (``"loss"`` or a metric name), ``patience`` None or 0 for never.
        checkpoints_dir, name: the run dir is ``checkpoints_dir/name`` (store in ``pickle/``).
        remote: True: no visdom from the trainer; False: live plots via ``visualizer.live``.
        remote_transfer_cmd: ``module.func`` handed every written file (rank 0).
        device: None (GPU ``local_rank`` if any, else CPU), ``"cpu"``, ``"cuda:1"``,
            or DeepLIIF-style GPU ids (several ids without a launcher: DataParallel).
        continue_train: resume from ``latest.pth`` (automatic after an elastic restart).
        print_freq, display_freq: steps between recorded losses / prediction images.
        save_epoch_freq: epochs between ``epoch_N.pth``; save_latest_freq: steps between
            mid-epoch ``latest.pth`` (0: at epoch ends only).
        amp: ``off``, ``bf16`` or ``fp16`` (GPU) autocast.
        seed: each rank seeds ``seed + rank``; the sampler shuffles with ``seed``.
        display_fn: ``fn(inputs, targets, outputs) -> NCHW tensor`` shown every display_freq.
        options: run options stored in the store's metadata and in checkpoints.
        progress: show a tqdm bar on rank 0 (None: only when stderr is a terminal).
        record: False writes no store and no checkpoints (benchmarks, dry runs).
        env: a :class:`~trainer.distributed.DistEnv` already detected (default: detect now).
    """
    return Runner(model, criterion, optimizer, datasets, **kwargs).fit()
