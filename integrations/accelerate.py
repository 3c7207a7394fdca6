"""An Accelerate tracker writing the snapshot store: ``Accelerator(log_with=[MonitorTracker(dir)])``.

``accelerator.init_trackers(name, config=...)`` opens the store in
``<run_dir>/pickle`` on the main process, with ``config`` as the run's options
(without ``config`` the first ``log`` opens it);
``accelerator.log(values, step=...)`` records scalars (names map to groups as
:func:`integrations._run.split_name` says; without ``step`` each call is the
next step); ``accelerator.end_training()`` closes it. Accelerate runs every
method on the main process only (``main_process_only``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import accelerate
from accelerate.state import PartialState
from accelerate.tracking import GeneralTracker, on_main_process

from trainer import SummaryWriter

from ._run import MonitorRun, check_adapter, files_under

SUPPORTED = ">=0.30,<2"


class MonitorTracker(GeneralTracker):
    """Accelerate tracker over the snapshot store (main process only).

    Args:
        run_dir: the run's directory (``<checkpoints_dir>/<name>``); the store is ``run_dir/pickle``.
        remote_transfer_cmd: ``module.func`` transfer hook (the trainer's
            ``--remote-transfer-cmd``): store files, and what :meth:`send` is given, go to it.
    """

    name = "remote_train_monitor"
    requires_logging_directory = False
    main_process_only = True

    def __init__(self, run_dir: str | Path, remote_transfer_cmd: str | None = None) -> None:
        check_adapter(self, "accelerate", accelerate.__version__, SUPPORTED, remote_transfer_cmd)
        super().__init__()
        self.run_dir = Path(run_dir)
        self.remote_transfer_cmd = remote_transfer_cmd
        self.run: MonitorRun | None = None
        self._main: bool | None = None

    @property
    def tracker(self) -> SummaryWriter | None:
        """Our :class:`trainer.SummaryWriter` over the store (None off the main process)."""
        return self.run.writer if self.run is not None else None

    @on_main_process
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """Open the store with ``values`` as the run's options (``init_trackers(config=...)``)."""
        if self.run is None:
            self._open(values)
        else:
            self.run.set_options(values)

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Record ``values`` at ``step`` (the next step when None); main process only."""
        if self._main is None:
            # Asked once: Accelerate's on_main_process builds a PartialState on every call.
            self._main = PartialState().is_main_process
        if self._main:
            self._open({}).log(values, step)

    @on_main_process
    def send(self, path: str | Path) -> None:
        """Hand a saved checkpoint (a file, or every file of a ``save_state`` directory) to the hook."""
        path = Path(path)
        self._open({}).send(files_under(path) if path.is_dir() else [path])

    @on_main_process
    def finish(self) -> None:
        """Close the store (Accelerate calls this from ``end_training``)."""
        if self.run is not None:
            run, self.run = self.run, None
            run.close("finished")

    def _open(self, options: dict[str, Any]) -> MonitorRun:
        if self.run is None:
            self.run = MonitorRun(
                self.run_dir / "pickle",
                self.run_dir.parent,
                options=options,
                transfer_spec=self.remote_transfer_cmd,
                world_size=PartialState().num_processes,
            )
        return self.run
