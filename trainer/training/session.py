"""Everything around one run's training loop, opened in an order that fails early and closed together.

What every writing run opens (the transfer runner, the store and its run lock) is
a :class:`~trainer.training.writing_run.WritingRun`; the session adds what only
training has: the process group, ``loss_log.txt``, checkpoints, the live view and
the system metrics. Only global rank 0 records, transfers, logs and saves.
"""

from __future__ import annotations

import gc
import logging
import socket
import sys
from collections.abc import Mapping
from contextlib import ExitStack, nullcontext
from pathlib import Path
from typing import Any

import torch

from run_core.endings import ended_state
from run_core.launch_env import LaunchEnv
from run_core.redaction import redact
from snapshot_store import Recorder
from snapshot_store.write.frame_sink import OnFile
from trainer.ranks import distributed
from trainer.ranks.distributed import Devices
from trainer.training import checkpoint, console
from trainer.training.config import RunConfig
from trainer.training.interrupts import Terminated, terminate_later
from trainer.training.live import LiveView
from trainer.training.run_alerts import run_alerts
from trainer.training.sampling import Loaders
from trainer.training.state import RunState
from trainer.training.system_metrics import StepTimer, SystemMetrics
from trainer.training.writing_run import WritingRun
from transfer_plugins.runner import Hook, TransferRunner

log = logging.getLogger(__name__)

LOSS_LOG = "loss_log.txt"


class RunSession:
    """The run's context: use as ``with RunSession(...) as session:`` around the loop.

    Args:
        config: the run's options.
        launch: this process's place in the job.
        devices: where this process computes.
        options: what the store's metadata and the checkpoints record as the run's options
            (secrets redacted).
        hook: the transfer hook :func:`preflight` resolved, if any.
    """

    def __init__(
        self,
        config: RunConfig,
        launch: LaunchEnv,
        devices: Devices,
        options: Mapping[str, Any],
        hook: Hook | None = None,
    ) -> None:
        self.config, self.launch, self.devices = config, launch, devices
        self.options = redact(options)  # only ever stored: the config keeps the real values
        # The trainer's master_process, read once: every other rank-0 choice derives from it.
        self.is_rank_zero = launch.is_rank_zero
        self.writes = self.is_rank_zero and config.record  # files and uploads
        self.progress = config.progress if self.is_rank_zero else False  # bars and their log
        self._hook = hook
        self._stack = ExitStack()
        self.run: WritingRun | None = None  # the transfer runner and the store (rank 0)
        self.live: LiveView | None = None
        self.system: SystemMetrics | None = None
        self.step_timer = StepTimer()  # fed by the loop; read by the system metrics sampler
        self.hosts: list[str] = []
        self.checkpoints_skipped = 0  # for a full disk, with on_disk_full="continue"
        self._disk_full = False  # the last checkpoint did not fit: said once until one does

    @property
    def loss_log(self) -> Path:
        """rank 0's text log of the run."""
        return self.config.run_dir / LOSS_LOG

    @property
    def recorder(self) -> Recorder | None:
        """The store's recorder on the writing process; None elsewhere."""
        return self.run.recorder if self.run is not None else None

    @property
    def transfer(self) -> TransferRunner | None:
        """The transfer hook's runner on the writing process, when a hook is set."""
        return self.run.transfer if self.run is not None else None

    def __enter__(self) -> RunSession:
        stack = self._stack
        try:
            if self.writes:  # first: a second writer must not touch loss_log.txt either
                self.run = self._writing_run().open()
            stack.enter_context(
                console.run_logging(
                    self.is_rank_zero, self.loss_log if self.config.record else None
                )
            )
            if self.recorder is not None and self.config.system_metrics_interval:
                self.system = SystemMetrics(
                    self.recorder,
                    self.config.system_metrics_interval,
                    self.step_timer,
                    self.devices.device,
                ).start()
            if distributed.init_process_group(self.launch, self.devices):
                stack.callback(distributed.destroy_process_group)
            self.hosts = sorted(
                {str(h) for h in distributed.all_gather_objects(socket.gethostname())}
            )
            if self.writes and not self.config.remote:
                self.live = self._start_live_view()
            if self.progress is not False:
                stack.enter_context(console.log_through_tqdm())
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        error = exc
        try:
            if exc_type is None:
                distributed.barrier()  # no barrier after a failure: peers may be gone
            elif self.writes and isinstance(exc, (KeyboardInterrupt, Terminated)):
                distributed.check_stopped_everywhere()  # or a peer died: see stop_witness
            gc.collect()  # DDP's gloo work is freed while the group lives (see Trainer.train)
        except BaseException as late:
            # The first error ends the run, but a stop that was a peer's death is a failure.
            # A later stop, such as the SIGTERM torchrun sends once a peer rank died, changes
            # neither how it ended nor its exit status, and skips no part of the close.
            if error is None or isinstance(late, distributed.RankLostError):
                error = late
            elif isinstance(late, (KeyboardInterrupt, Terminated)):
                return
            raise
        finally:
            failed = ended_state(error) == "failed"
            with terminate_later() if failed else nullcontext():
                try:
                    self._close_outputs(ended_state(error))
                finally:
                    self._stack.close()

    # --- what the loop calls ---------------------------------------------------------------

    def log_layout(self, loaders: Loaders, state: RunState) -> None:
        """Say how the run is laid out (log and status), once, before the first step."""
        launch, cfg, steps_per_epoch = self.launch, self.config, loaders.steps_per_epoch
        effective = cfg.batch_size * launch.world_size
        total = state.step + (cfg.num_epochs - state.epoch) * steps_per_epoch - state.batch_in_epoch
        dp = self.devices.data_parallel_ids
        where = f"{self.devices.device}" + (f" (DataParallel over GPUs {list(dp)})" if dp else "")
        count = launch.world_size
        processes = "one process" if count == 1 else f"{count} processes"
        if launch.launcher != "none":
            processes += f" ({launch.launcher} launch)"
        log.info(
            "run %s: %s on %s; batch size %d per process, effective "
            "batch size %d; %d training samples, %d steps per epoch, %d epochs (%d steps)",
            cfg.run_dir,
            processes,
            where,
            cfg.batch_size,
            effective,
            loaders.train_size,
            steps_per_epoch,
            cfg.num_epochs,
            total,
        )
        if self.recorder is not None and cfg.remote:
            log.info(
                "watch it: %s",
                console.watch_command(
                    Path(cfg.store_dir), Path(cfg.checkpoints_dir), cfg.remote_transfer_cmd
                ),
            )
        self.set_status(
            total_steps=total,
            steps_per_epoch=steps_per_epoch,
            n_epochs=cfg.num_epochs,
            world_size=launch.world_size,
            hosts=self.hosts,
            effective_batch_size=effective,
        )

    def log(self, values: Mapping[str, float], step: int, epoch: float, group: str) -> None:
        """Record scalars (rank 0; nothing elsewhere)."""
        if self.recorder is not None:
            self.recorder.log(values, step=step, epoch=epoch, group=group)

    def log_image(self, name: str, image: Any, step: int, epoch: float) -> None:
        """Record an NCHW batch of images as one grid (rank 0)."""
        if self.recorder is not None:
            self.recorder.log_image(name, image, step, epoch=epoch, dataformats="NCHW")

    def set_status(self, **fields: Any) -> None:
        """Add fields to the run's status document (rank 0)."""
        if self.recorder is not None:
            self.recorder.set_status(**fields)

    def save_checkpoint(self, state: dict[str, Any], filename: str) -> Path | None:
        """Write ``state`` atomically into the run dir (rank 0) and send it; returns its path.

        Every rank learns whether it fit. On a full disk the run stops with
        :class:`~trainer.training.checkpoint.DiskFullError` (the last good checkpoint kept), or,
        with ``on_disk_full="continue"``, returns None and training goes on.
        """
        path = self.config.run_dir / filename
        full: checkpoint.DiskFullError | None = None
        if self.run is not None:
            # The points up to this step are on disk before the checkpoint says so.
            self.run.recorder.flush()
            try:
                checkpoint.save_whole(state, path)
            except checkpoint.DiskFullError as err:
                full = err
            else:
                self.run.send(path)
        flag = torch.tensor([0.0 if full is None else 1.0], device=self.devices.device)
        if not distributed.all_reduce_sum(flag).item():
            if self._disk_full:
                self._disk_full = False
                log.info("%s written: checkpoints are saved again", path)
            return path
        self._on_disk_full(full, path)
        return None

    def _on_disk_full(self, full: checkpoint.DiskFullError | None, path: Path) -> None:
        """Go on without this checkpoint (said once), or stop the run on every rank."""
        latest = self.config.run_dir / checkpoint.LATEST
        if self.config.on_disk_full == "continue":
            if full is not None and not self._disk_full:
                kept = f"the last good one is {latest}" if latest.exists() else "none written yet"
                log.warning(
                    "disk full: %s. Training goes on without checkpoints (--on-disk-full "
                    "continue; %s) and saves them again once space frees up",
                    full,
                    kept,
                )
            self._disk_full = True
            self.checkpoints_skipped += 1
            self.set_status(checkpoints_skipped=self.checkpoints_skipped)
            return
        if full is None:  # another rank's view: rank 0 writes and says why
            raise checkpoint.DiskFullError(f"rank 0 could not write {path} (disk full); stopping")
        if latest.exists():
            then = (
                f"the last good checkpoint {latest} is kept: free space (or move the run dir), "
                "then resume with --continue-train, or pass --on-disk-full continue"
            )
        else:
            then = (
                "no checkpoint was written yet, so there is nothing to resume: free space "
                "(or choose another --checkpoints-dir) and start the run again"
            )
        raise checkpoint.DiskFullError(f"disk full: {full}; training stopped and {then}")

    def checkpoint_to_resume(self) -> Path | None:
        """``latest.pth`` when asked to continue (or after an elastic restart), seen by every rank."""
        path, restarts = self.config.run_dir / checkpoint.LATEST, self.launch.restart_count
        if not (self.config.continue_train or restarts):
            return None
        found = torch.tensor([float(path.exists()), 1.0])
        seen_by, world = (int(v) for v in distributed.all_reduce_sum(found).tolist())
        if 0 < seen_by < world:
            raise RuntimeError(
                f"{path} is visible on {seen_by} of {world} ranks; the checkpoints "
                "dir must be on a filesystem all nodes share"
            )
        if seen_by:
            return path
        if self.config.continue_train:
            raise FileNotFoundError(f"continue_train: no checkpoint {path} to resume from")
        log.info("restart %d: no checkpoint yet, starting from scratch", restarts)
        return None

    def send_log(self) -> None:
        """Send the growing ``loss_log.txt`` (once an epoch: each send copies the whole file)."""
        if self.run is not None and self.loss_log.exists():
            self.run.send(self.loss_log, closed=False)

    # --- setup and teardown ------------------------------------------------------------------

    def _writing_run(self) -> WritingRun:
        cfg = self.config
        spec = cfg.remote_transfer_cmd
        return WritingRun(
            cfg.run_dir,
            self._open_store,
            hook=self._hook,
            spec=str(spec) if spec is not None else None,
            transfer_root=Path(cfg.checkpoints_dir),
            sync_dir=cfg.run_dir,
            # loss_log.txt is complete at the close: its final copy, after what the drain logs.
            log_file=self.loss_log,
            drain_s=cfg.remote_transfer_wait,
        )

    def _open_store(self, on_file: OnFile | None) -> Recorder:
        """The run's store, its files told to ``on_file``; a second trainer of the name is refused."""
        return Recorder(
            self.config.store_dir,
            options=self.options,
            world_size=self.launch.world_size,
            hosts=[socket.gethostname()],
            rank=0,
            on_file=on_file,
            instead="choose another --name",
            alerts=run_alerts(self.config.alert_rule, self.config.alert_cmd),
        )

    def _start_live_view(self) -> LiveView | None:
        env = self.config.display_env or self.config.name
        try:
            return LiveView(
                self.config.store_dir,
                self.config.display_server,
                self.config.display_port,
                env,
                self.config.run_dir / "visualizer.log",
            )
        except OSError as err:  # plots are a convenience; training goes on without them
            log.warning("live plots unavailable (%s); the store is still written", err)
            return None

    def _close_outputs(self, state: str) -> None:
        if self.system is not None:
            self.system.stop()  # before the recorder closes: no sample is lost or refused
        if self.run is not None:
            # The drain shows progress, Ctrl-C skips it; what is left stays in
            # transfer.unsent for the exit status.
            self.run.close(state)
        if self.live is not None:
            self.live.stop()  # after the recorder: the visualizer draws the last points first
            log.info(
                "live plots stopped with training; to view this run again: "
                "python run_visualizer_local.py --pickle-dir %s",
                self.config.store_dir,
            )
