"""An Accelerate tracker writing the snapshot store, standing in for TensorBoard's.

The switch is one line before the ``Accelerator`` is made::

    remote_train_monitor.accelerate.replace_tensorboard()

after which ``log_with="tensorboard"`` (a script's ``--report_to tensorboard``)
makes this tracker where Accelerate made TensorBoard's: the store is
``<logging_dir>/<project_name>`` (``logging_dir`` defaults to ``project_dir``),
where TensorBoard's event files went, ``init_kwargs["tensorboard"]`` go to our
:class:`~trainer.SummaryWriter`, and code that looks the TensorBoard tracker up
keeps working: ``accelerator.get_tracker("tensorboard")`` finds it, its
``.writer`` (and ``get_tracker(..., unwrap=True)``) is our ``SummaryWriter``,
so ``tracker.writer.add_images(...)`` records images. ``log`` does what
TensorBoard's tracker does: numbers as scalars under the names given, ``str``
as text, a dict as ``add_scalars``; without ``step`` the step is TensorBoard's 0.
Passing an instance, ``log_with=[MonitorTracker(name, logging_dir)]``, works
too, and without the tensorboard package installed (which Accelerate asks for
before it makes a ``"tensorboard"`` tracker).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import accelerate
from accelerate.state import PartialState
from accelerate.tracking import (
    LOGGER_TYPE_TO_CLASS,
    GeneralTracker,
    get_available_trackers,
    on_main_process,
)

from trainer import SummaryWriter
from trainer.ranks.distributed import settle_collectives_at_exit

from ._run import MonitorRun, check_adapter, files_under

log = logging.getLogger(__name__)

ACCELERATE_VERSIONS = ">=0.30,<2"


class MonitorTracker(GeneralTracker):
    """Accelerate tracker over the snapshot store (main process only), named ``"tensorboard"``.

    Args:
        run_name: the run (``init_trackers``'s ``project_name``); the store is
            ``logging_dir/run_name``, as TensorBoard's tracker's log directory.
        logging_dir: the directory of runs (Accelerate's ``logging_dir``).
        remote_transfer_cmd: ``module.func`` transfer hook (the trainer's
            ``--remote-transfer-cmd``): store files, and what :meth:`send` is given, go to it.
        **kwargs: our :class:`~trainer.SummaryWriter`'s arguments (TensorBoard's ``flush_secs``...).
    """

    name = "tensorboard"
    requires_logging_directory = True
    main_process_only = True

    def __init__(
        self,
        run_name: str,
        logging_dir: str | os.PathLike[str] = ".",
        remote_transfer_cmd: str | None = None,
        **kwargs: Any,
    ) -> None:
        check_adapter(
            self, "accelerate", accelerate.__version__, ACCELERATE_VERSIONS, remote_transfer_cmd
        )
        super().__init__()
        self.run_name = str(run_name)
        self.logging_dir = str(Path(logging_dir) / self.run_name)
        self.root = Path(logging_dir)
        self.remote_transfer_cmd = remote_transfer_cmd
        self.writer_kwargs = kwargs
        self.run: MonitorRun | None = None
        self._main: bool | None = None

    @on_main_process
    def start(self) -> None:
        """Open the store (Accelerate >= 1.3 calls this from ``init_trackers``)."""
        self._open()

    @property
    def writer(self) -> SummaryWriter | None:
        """Our :class:`trainer.SummaryWriter` over the store (None off the main process)."""
        return self._open().writer if self._is_main() else None

    @property
    def tracker(self) -> SummaryWriter | None:
        """What ``get_tracker("tensorboard", unwrap=True)`` returns: :attr:`writer`."""
        return self.writer

    @on_main_process
    def store_init_configuration(self, values: dict[str, Any]) -> None:
        """``init_trackers(config=...)``: the run's options, and an hparams record as TensorBoard's."""
        run = self._open()
        run.set_options(values)
        run.writer.add_hparams(values, metric_dict={})

    def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Record ``values`` at ``step`` (TensorBoard's 0 when None); main process only."""
        if self._is_main():
            self._open().log(values, step)

    @on_main_process
    def log_images(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
        """Record each batch of images in ``values`` (``add_images``, as TensorBoard's tracker)."""
        writer = self._open().writer
        for tag, images in values.items():
            writer.add_images(tag, images, global_step=step, **kwargs)

    @on_main_process
    def send(self, path: str | Path) -> None:
        """Hand a saved checkpoint (a file, or every file of a ``save_state`` directory) to the hook."""
        path = Path(path)
        self._open().send(files_under(path) if path.is_dir() else [path])

    @on_main_process
    def finish(self) -> None:
        """Close the store (Accelerate calls this from ``end_training``). A script that raises
        before it is closed at exit, as the writer's :func:`~run_core.endings.ended_state` of it."""
        if self.run is not None:
            run, self.run = self.run, None
            run.close("finished")

    def _is_main(self) -> bool:
        if self._main is None:
            # Asked once: Accelerate's on_main_process builds a PartialState on every call.
            self._main = PartialState().is_main_process
        return self._main

    def _open(self) -> MonitorRun:
        if self.run is None:
            self.run = MonitorRun(
                Path(self.logging_dir),
                self.root,
                transfer_spec=self.remote_transfer_cmd,
                world_size=PartialState().num_processes,
                **self.writer_kwargs,
            )
        return self.run


def replace_tensorboard() -> None:
    """Make Accelerate's ``"tensorboard"`` tracker :class:`MonitorTracker` (call it before the
    ``Accelerator`` is made): ``log_with="tensorboard"`` then writes the store."""
    LOGGER_TYPE_TO_CLASS["tensorboard"] = MonitorTracker
    settle_collectives_at_exit()  # every rank calls this; only the main one makes a tracker
    if "tensorboard" not in {str(t) for t in get_available_trackers()}:
        log.warning(
            "Accelerate makes a 'tensorboard' tracker only when the tensorboard package is "
            "installed: pip install tensorboard, or pass log_with=[MonitorTracker(name, dir)]"
        )
