"""Everything around one run's training loop, opened in an order that fails early and closed together.

The session owns the process group, the snapshot store's recorder, the
transfer runner the recorder's files go to, ``loss_log.txt`` and the live
view. Only global rank 0 records, transfers, logs and saves.
"""

from __future__ import annotations

import gc
import logging
import socket
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any

from snapshot_store import LaunchEnv, Recorder, ensure_writable_dir, plain
from transfer_plugins.runner import Hook, TransferRunner, resolve_hook, run_preflight

from . import checkpoint, distributed
from .config import RunConfig
from .distributed import Devices
from .live import LiveView
from .options import UsageError

log = logging.getLogger(__name__)
_pkg_log = logging.getLogger("trainer")

LATEST, BEST = "latest.pth", "best.pth"
LOSS_LOG = "loss_log.txt"
TRANSFER_DRAIN_S = 60.0


def preflight(config: RunConfig, env: LaunchEnv, devices: Devices | None = None) -> Hook | None:
    """Every check that can fail on bad input, before a process group or a worker exists.

    Returns the resolved transfer hook (checked against its destination on rank 0).
    """
    if devices is not None and config.amp == "fp16" and devices.device.type != "cuda":
        raise UsageError("--amp fp16 needs a GPU; use --amp bf16 or off on the CPU")
    try:
        ensure_writable_dir(config.run_dir)
    except OSError as err:
        raise UsageError(
            f"--checkpoints-dir {config.checkpoints_dir}: can not write "
            f"{config.run_dir} ({err.strerror or err})"
        ) from None
    if config.continue_train and not (config.run_dir / LATEST).exists():
        raise UsageError(
            f"--continue-train: no checkpoint {config.run_dir / LATEST} to resume from"
        )
    if not config.remote_transfer_cmd:
        return None
    hook = resolve_hook(config.remote_transfer_cmd)  # every rank: a typo fails everywhere
    if env.master_process and config.record:
        run_preflight(hook, config.remote_transfer_cmd)
    return hook


class RunSession:
    """The run's context: use as ``with RunSession(...) as session:`` around the loop.

    Args:
        config: the run's options.
        env: this process's place in the job.
        devices: where this process computes.
        options: what the store's metadata and the checkpoints record as the run's options.
        hook: the transfer hook :func:`preflight` resolved, if any.
    """

    def __init__(
        self,
        config: RunConfig,
        env: LaunchEnv,
        devices: Devices,
        options: Mapping[str, Any],
        hook: Hook | None = None,
    ) -> None:
        self.config, self.env, self.devices = config, env, devices
        self.options = plain(dict(options))
        self.master = env.master_process
        self.writes = self.master and config.record  # the one gate for files and uploads
        self._hook = hook
        self._stack = ExitStack()
        self.transfer: TransferRunner | None = None
        self.recorder: Recorder | None = None
        self.live: LiveView | None = None
        self.hosts: list[str] = []
        self.status: dict[str, Any] = {}

    @property
    def loss_log(self) -> Path:
        """rank 0's text log of the run."""
        return self.config.run_dir / LOSS_LOG

    def __enter__(self) -> RunSession:
        stack = self._stack
        try:
            stack.enter_context(self._run_logging())
            if self.writes:
                if self._hook is not None:
                    self.transfer = TransferRunner(
                        self._hook,
                        Path(self.config.checkpoints_dir),
                        name=str(self.config.remote_transfer_cmd),
                        spec=self.config.remote_transfer_cmd,
                    )
                self.recorder = Recorder(
                    self.config.store_dir,
                    options=self.options,
                    world_size=self.env.world_size,
                    hosts=[socket.gethostname()],
                    rank=0,
                    on_file=self._on_file,
                )
            if distributed.init_process_group(self.env, self.devices):
                stack.callback(distributed.destroy_process_group)
            self.hosts = sorted(
                {str(h) for h in distributed.all_gather_objects(socket.gethostname())}
            )
            if self.writes and not self.config.remote:
                self.live = self._start_live_view()
            if self.master and self.config.progress is not False:
                stack.enter_context(_log_through_tqdm())
        except BaseException:
            self.__exit__(*_current_exception())
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            distributed.barrier()  # no barrier after a failure: peers may be gone
        gc.collect()  # DDP's gloo work is freed while the group lives (see Trainer.train)
        try:
            self._close_outputs("finished" if exc_type is None else "failed")
        finally:
            self._stack.close()

    # --- what the loop calls ---------------------------------------------------------------

    def log(self, values: Mapping[str, float], step: int, progress: float, group: str) -> None:
        """Record scalars (rank 0; nothing elsewhere)."""
        if self.recorder is not None:
            self.recorder.log(values, step=step, epoch=progress, group=group)

    def log_image(self, name: str, image: Any, step: int, progress: float) -> None:
        """Record an NCHW batch of images as one grid (rank 0)."""
        if self.recorder is not None:
            self.recorder.log_image(name, image, step, epoch=progress, dataformats="NCHW")

    def set_status(self, **fields: Any) -> None:
        """Add fields to the run's status document (rank 0)."""
        self.status.update(fields)
        if self.recorder is not None:
            self.recorder.set_status(**fields)

    def save_checkpoint(self, state: dict[str, Any], filename: str) -> Path:
        """Write ``state`` atomically into the run dir (rank 0) and send it; returns its path."""
        path = self.config.run_dir / filename
        if self.writes:
            assert self.recorder is not None
            self.recorder.flush()  # points up to this step are on disk before the checkpoint says so
            checkpoint.save(state, path)
            self._on_file(path, True)
        return path

    def send_log(self) -> None:
        """Send the growing ``loss_log.txt`` (once an epoch: each send copies the whole file)."""
        if self.transfer is not None and self.loss_log.exists():
            self.transfer.submit(self.loss_log, closed=False)

    # --- setup and teardown ------------------------------------------------------------------

    def _on_file(self, path: Path, closed: bool) -> None:
        if self.transfer is not None:
            self.transfer.submit(path, closed=closed)

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

    def _close_outputs(self, outcome: str) -> None:
        if self.recorder is not None:
            self.recorder.close(outcome)
        if self.transfer is not None:
            if self.loss_log.exists():
                self.transfer.submit(self.loss_log, closed=True)  # complete now: its final copy
            self._drain_transfers(self.transfer)
        if self.live is not None:
            self.live.stop()  # after the recorder: the visualizer draws the last points first
            log.info(
                "live plots stopped with training; to view this run again: "
                "python run_visualizer_local.py --pickle-dir %s",
                self.config.store_dir,
            )

    def _drain_transfers(self, transfer: TransferRunner) -> None:
        left = transfer.close(TRANSFER_DRAIN_S)
        if left:
            log.warning(
                "%d file(s) were not transferred by %s: %s. Once the destination is "
                "reachable, run: python -m trainer sync %s --remote-transfer-cmd %s",
                len(left),
                transfer.name,
                ", ".join(map(str, left)),
                self.config.run_dir,
                transfer.name,
            )

    @contextmanager
    def _run_logging(self) -> Iterator[None]:
        """Rank 0 logs to the console and ``loss_log.txt``; other ranks only log errors."""
        previous_level = _pkg_log.level
        handlers: list[logging.Handler] = []
        if self.master:
            _pkg_log.setLevel(logging.INFO)
            if self.config.record:
                to_file = logging.FileHandler(self.loss_log, encoding="utf-8")
                to_file.setFormatter(
                    logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S")
                )
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


@contextmanager
def _log_through_tqdm() -> Iterator[None]:
    """Send console log lines through ``tqdm.write`` so they do not tear the progress bar."""
    from tqdm.contrib.logging import _is_console_logging_handler, logging_redirect_tqdm

    loggers = [
        lg
        for lg in (logging.getLogger(), _pkg_log)
        if any(_is_console_logging_handler(h) for h in lg.handlers)
    ]
    with logging_redirect_tqdm(loggers) if loggers else nullcontext():
        yield


def _current_exception() -> tuple[Any, Any, Any]:
    import sys

    return sys.exc_info()
