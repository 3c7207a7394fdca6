"""A drop-in for the scalar and image methods of ``torch.utils.tensorboard.SummaryWriter``.

Switching a script that logs to TensorBoard takes one import::

    from trainer import SummaryWriter   # was: from torch.utils.tensorboard import SummaryWriter

Tags map to the store's groups the way TensorBoard groups its charts: the part
before the first ``/`` is the group (one visdom window), the rest the trace name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from snapshot_store import Recorder

from .interrupts import close_at_exit, outcome_of


def _split_tag(tag: str) -> tuple[str, str]:
    group, sep, name = tag.partition("/")
    return (group, name) if sep and name else ("scalars", tag)


class SummaryWriter:
    """Writes the snapshot store directly in ``log_dir`` (rank 0 only)."""

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        flush_secs: float = 0.1,
        **recorder_kwargs: Any,
    ) -> None:
        if log_dir is None:  # TensorBoard's default: runs/<date>_<host><comment>
            import socket

            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = Path("runs") / f"{stamp}_{socket.gethostname()}{comment}"
        self.log_dir = str(log_dir)
        self.recorder = Recorder(log_dir, flush_interval=flush_secs, **recorder_kwargs)
        close_at_exit(self, self.recorder.close)
        self._default_step = 0
        self._log_scalar = self.recorder.log_scalar  # bound once: add_scalar is the hot path
        self._tags: dict[str, tuple[str, str]] = {}  # tag -> (group, name), split once

    def get_logdir(self) -> str:
        """The directory this writer writes to."""
        return self.log_dir

    def _step(self, global_step: int | None) -> int:
        if global_step is None:
            return self._default_step
        self._default_step = int(global_step)
        return self._default_step

    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Record one scalar under ``tag`` (``group/name``); a tensor is not synchronised
        (see :meth:`snapshot_store.Recorder.log` for what that asks of you)."""
        split = self._tags.get(tag)
        if split is None:
            split = self._tags[tag] = _split_tag(tag)
        if global_step is None:
            global_step = self._default_step
        else:
            self._default_step = global_step = int(global_step)
        self._log_scalar(split[1], scalar_value, global_step, split[0], walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Record several scalars as traces of one window, ``main_tag``."""
        self.recorder.log(
            tag_scalar_dict, self._step(global_step), group=main_tag, wall_time=walltime
        )

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Record one image (CHW by default, as TensorBoard)."""
        self.recorder.log_image(
            tag, img_tensor, self._step(global_step), dataformats=dataformats, wall_time=walltime
        )

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Record a batch of images, tiled into one grid."""
        self.recorder.log_image(
            tag, img_tensor, self._step(global_step), dataformats=dataformats, wall_time=walltime
        )

    def flush(self) -> None:
        """Block until everything recorded so far is on disk."""
        self.recorder.flush()

    def close(self) -> None:
        """Flush and mark the run finished."""
        self.recorder.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.recorder.close(outcome_of(exc))
