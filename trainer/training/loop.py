"""The one training loop, behind ``python -m trainer train`` and :func:`trainer.fit`.

It runs in whatever process group the session joined (one process,
DataParallel, or one DDP rank among many) and keeps the plots honest:

* the train loss is a sum and a count per rank, all-reduced only at print steps,
  so each point is the mean over every sample of the interval on every rank;
* validation runs on a padding-free shard per rank and all-reduces sums and
  counts, so its loss and metrics are exact over the whole validation set;
* only global rank 0 records, logs and saves (the session's gate).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainer.checkpoint_artifacts import CheckpointArtifacts, last_score
from trainer.ranks import distributed
from trainer.training import checkpoint, console, interrupts
from trainer.training.checkpoint import BEST, LATEST
from trainer.training.config import RunConfig
from trainer.training.sampling import Loaders
from trainer.training.session import RunSession
from trainer.training.state import FitResult, RunState

log = logging.getLogger(__name__)

Metric = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
# The name a display function's images are logged under, unless it names them itself
# (its ``image_name``: the CLI's grid says what its frames mean).
DISPLAY_NAME = "predictions"
AMP_DTYPES = {"off": None, "bf16": torch.bfloat16, "fp16": torch.float16}


class Trainer:
    """Trains one model in one session; :meth:`train` is the whole run."""

    def __init__(
        self,
        model: nn.Module,
        criterion: Callable[[Any, Any], torch.Tensor],
        optimizer: torch.optim.Optimizer,
        loaders: Loaders,
        session: RunSession,
        *,
        scheduler: Any = None,
        metrics: Mapping[str, Metric] | None = None,
        display_fn: Callable[[Any, Any, Any], torch.Tensor] | None = None,
    ) -> None:
        self.config: RunConfig = session.config
        self.session, self.loaders = session, loaders
        self.criterion, self.optimizer, self.scheduler = criterion, optimizer, scheduler
        self.metrics = dict(metrics or {})
        self.display_fn = display_fn
        self.device = session.devices.device
        self.model = model.to(self.device)
        self.scaler = torch.amp.GradScaler(self.device.type) if self.config.amp == "fp16" else None
        # What a checkpoint saves and a resume loads, besides the run state.
        self._parts = {
            "model": self.model,
            "optimizer": optimizer,
            "scheduler": scheduler,
            "scaler": self.scaler,
        }
        self.state = RunState()
        self.saved: dict[str, Path] = {}
        self._artifacts = CheckpointArtifacts(
            session.recorder, self.config.run_dir, self.config.name
        )
        self.stopped_early = False
        self._loss_sum = torch.zeros((), device=self.device)  # kept on the device: no sync per step
        self._seen = 0
        self._interval_start = time.perf_counter()

    def autocast(self) -> AbstractContextManager[Any]:
        """Mixed precision as configured (a no-op for ``amp="off"``)."""
        dtype = AMP_DTYPES[self.config.amp]
        return torch.autocast(self.device.type, dtype=dtype) if dtype else nullcontext()

    # --- the run ---------------------------------------------------------------------------

    def train(self) -> FitResult:
        """Train for ``num_epochs`` (or until early stopping); the result on every rank."""
        self._resume()
        self.net, self.eval_net = distributed.wrap_model(
            self.model, self.session.launch, self.session.devices
        )
        try:
            self.session.log_layout(self.loaders, self.state)
            for epoch in range(self.state.epoch, self.config.num_epochs):
                self._run_epoch(epoch)
                scores = self._validate(epoch)
                improved = self._end_epoch(epoch, scores)
                self._save_epoch_checkpoints(epoch, improved)
                if self.state.should_stop(self.config.patience):
                    self.stopped_early = True
                    log.info(
                        "early stopping: no %s improvement of more than %g for %d epochs "
                        "(best %.4f at epoch %s)",
                        self.config.monitor,
                        self.config.min_delta,
                        self.state.bad_epochs,
                        self.state.best_value,
                        self.state.best_epoch,
                    )
                    break
        finally:
            self.session.set_status(
                epochs_completed=self.state.epoch, stopped_early=self.stopped_early
            )
            # Freed while the process group lives: gloo's destructor, run after the group
            # is gone, waits holding the GIL on a thread that needs it (torch 2.13).
            self.net = self.eval_net = self.model
            self._artifacts.close()  # the checkpoints' records, before the store closes
        return self._result()

    # --- training --------------------------------------------------------------------------

    def _run_epoch(self, index: int) -> None:
        self.net.train()
        start = self.state.batch_in_epoch  # > 0 only when resuming mid-epoch
        self.loaders.start_epoch(index, start)
        bar = console.progress_bar(
            self.session.progress,
            index,
            self.config.num_epochs,
            self.loaders.steps_per_epoch,
            start,
        )
        self._interval_start = time.perf_counter()
        steps = self.loaders.steps_per_epoch
        timer = self.session.step_timer  # the data loader wait in the system metrics
        timer.start(self.state.step)
        for batch_index, (inputs, targets) in enumerate(self.loaders.train, start=start):
            interrupts.raise_if_terminated()  # a SIGTERM its handler could not raise
            timer.arrived()
            outputs = self._run_batch(inputs, targets)
            self.state.step += 1
            self.state.batch_in_epoch = batch_index + 1
            epoch = index + self.state.batch_in_epoch / steps  # fractional: stored with each value
            end_of_epoch = self.state.batch_in_epoch == steps
            if self.state.step % self.config.print_freq == 0 or end_of_epoch:
                self._log_train(epoch, bar)
            if (
                self.display_fn
                and self.config.display_freq
                and self.state.step % self.config.display_freq == 0
            ):
                grid = self.display_fn(inputs, targets, outputs)
                name = getattr(self.display_fn, "image_name", DISPLAY_NAME)
                self.session.log_image(name, grid, self.state.step, epoch)
            latest_freq = self.config.save_latest_freq
            if latest_freq and self.state.step % latest_freq == 0 and not end_of_epoch:
                if self._seen:
                    self._log_train(epoch, bar)  # checkpoints fall on interval boundaries
                self._save_checkpoint(LATEST)
                self._interval_start = time.perf_counter()
            bar.update()
            timer.done()
        bar.close()
        self.state.epoch, self.state.batch_in_epoch = index + 1, 0

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
        self._loss_sum += loss.detach().float() * len(targets)
        self._seen += len(targets)
        return outputs

    def _log_train(self, epoch: float, bar: Any) -> None:
        """Record the train loss of the interval, averaged over its samples on all ranks."""
        totals = torch.stack([self._loss_sum, torch.tensor(float(self._seen), device=self.device)])
        loss_sum, seen = distributed.all_reduce_sum(totals).tolist()
        elapsed = max(time.perf_counter() - self._interval_start, 1e-9)
        loss, throughput = loss_sum / seen, seen / elapsed
        self._loss_sum.zero_()
        self._seen = 0
        self._interval_start = time.perf_counter()
        lrs = {f"lr{i}" if i else "lr": g["lr"] for i, g in enumerate(self.optimizer.param_groups)}
        self._record("train", {"loss": loss}, epoch)
        self._record("lr", lrs, epoch)
        self._record("throughput", {"samples_per_s": throughput}, epoch)
        bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        log.info(
            "(epoch %.2f, step %d, lr %.3g, %.0f samples/s) loss %.4f",
            epoch,
            self.state.step,
            lrs["lr"],
            throughput,
            loss,
        )

    def _record(self, group: str, values: dict[str, float], epoch: float) -> None:
        self.state.record(group, values, epoch)
        self.session.log(values, self.state.step, epoch, group)

    # --- validation, schedule, early stopping ------------------------------------------------

    @torch.no_grad()
    def _validate(self, epoch: int) -> dict[str, float] | None:
        """Loss and metrics over the whole validation set (every rank's shard, summed)."""
        if self.loaders.valid is None:
            return None
        self.eval_net.eval()
        sums = torch.zeros(2 + len(self.metrics), dtype=torch.float64, device=self.device)
        for inputs, targets in self.loaders.valid:
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
        scores = dict(
            zip(["loss", *self.metrics], (t / max(count, 1) for t in totals), strict=True)
        )
        self._record("val", {"loss": scores["loss"]}, float(epoch + 1))
        if self.metrics:
            self._record("metric", {k: scores[k] for k in self.metrics}, float(epoch + 1))
        log.info(
            "epoch %d validation (%d samples): %s",
            epoch + 1,
            int(count),
            ", ".join(f"{k} {v:.4f}" for k, v in scores.items()),
        )
        return scores

    def _end_epoch(self, epoch: int, scores: dict[str, float] | None) -> bool:
        """Step the schedule and track the best score; True when this epoch is the best."""
        plateau = isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        if self.scheduler is not None and not plateau:
            self.scheduler.step()
        if scores is None:
            return False
        if self.config.monitor not in scores:
            raise KeyError(
                f"monitor {self.config.monitor!r} is not among the validation scores "
                f"{sorted(scores)}"
            )
        if plateau:
            self.scheduler.step(scores[self.config.monitor])
        return self.state.observe(
            epoch, scores[self.config.monitor], self.config.mode, self.config.min_delta
        )

    # --- checkpoints -----------------------------------------------------------------------

    def _save_epoch_checkpoints(self, epoch: int, improved: bool) -> None:
        self._save_checkpoint(LATEST)
        self.session.send_log()
        if self.config.save_epoch_freq and (epoch + 1) % self.config.save_epoch_freq == 0:
            self._save_checkpoint(f"epoch_{epoch + 1}.pth")
        if improved:
            self._save_checkpoint(BEST)

    def _save_checkpoint(self, filename: str) -> None:
        """Rank 0 writes the full run state; every rank takes part (the RNG gather)."""
        rng_states = distributed.all_gather_objects(checkpoint.rng_state())
        if not self.config.record:
            return
        state = {
            **checkpoint.parts_state(self._parts),
            **self.state.to_checkpoint(),
            "world_size": self.session.launch.world_size,
            "batch_size": self.config.batch_size,
            "rng": rng_states,
            "options": self.session.options,
        }
        path = self.session.save_checkpoint(state, filename)
        if path is not None:  # None: the disk is full and the run goes on without it
            self.saved[filename] = path
            score = last_score(self.state.history, self.config.monitor)
            meta = {"epoch": self.state.epoch, "monitor": self.config.monitor, "score": score}
            self._artifacts.saved(path, self.state.step, {**meta, "mode": self.config.mode})

    def _resume(self) -> None:
        """Continue from ``latest.pth`` when asked, or after an elastic restart."""
        path = self.session.checkpoint_to_resume()
        if path is None:
            return
        launch, saved = self.session.launch, checkpoint.load(path)
        checkpoint.load_parts(saved, self._parts)
        layout = (saved["world_size"], saved["batch_size"])
        same_layout = layout == (launch.world_size, self.config.batch_size)
        self.state = RunState.from_checkpoint(saved, mid_epoch=same_layout)
        self._artifacts.resumed_from(path, self.state.step)
        if same_layout:
            checkpoint.set_rng_state(saved["rng"][launch.rank])
        elif saved["batch_in_epoch"]:
            log.warning(
                "resuming with %d process(es) x batch %d instead of %d x %d: epoch %d "
                "restarts from its first batch",
                launch.world_size,
                self.config.batch_size,
                *layout,
                self.state.epoch + 1,
            )
        self.saved = {
            n: self.config.run_dir / n for n in (LATEST, BEST) if (self.config.run_dir / n).exists()
        }
        why = (
            f"restart {launch.restart_count} of the worker group"
            if launch.restart_count
            else "continue_train"
        )
        log.info(
            "%s: resumed from %s at epoch %d, step %d",
            why,
            path,
            self.state.epoch + (1 if self.state.batch_in_epoch else 0),
            self.state.step,
        )

    def _result(self) -> FitResult:
        return FitResult(
            model=self.model,
            history=self.state.history,
            best_value=self.state.best_value,
            best_epoch=self.state.best_epoch,
            best_checkpoint=self.saved.get(BEST),
            latest_checkpoint=self.saved.get(LATEST),
            run_dir=self.config.run_dir,
            epochs_completed=self.state.epoch,
            global_step=self.state.step,
            stopped_early=self.stopped_early,
        )
