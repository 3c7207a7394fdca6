"""A drop-in for ``torch.utils.tensorboard.SummaryWriter``: every method, same signatures.

Switching a script that logs to TensorBoard takes one import::

    from trainer import SummaryWriter   # was: from torch.utils.tensorboard import SummaryWriter

Tags map to the store's groups the way TensorBoard groups its charts: the part
before the first ``/`` is the group (one visdom window), the rest the trace name.
The methods beyond scalars and images are in :mod:`trainer.writer_extras`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from snapshot_store import Recorder

from .image_formats import tensorboard_pixels
from .interrupts import close_at_exit, outcome_of
from .writer_extras import WriterExtras, skips_bad_input

log = logging.getLogger(__name__)

# Our writer thread writes at least this often whatever ``flush_secs`` says: the
# point is a live view (TensorBoard's 120 s default only bounds the delay).
_LIVE_SECONDS = 0.1


def _split_tag(tag: str) -> tuple[str, str]:
    group, sep, name = tag.partition("/")
    return (group, name) if sep and name else ("scalars", tag)


class SummaryWriter(WriterExtras):
    """Writes the snapshot store directly in ``log_dir`` (rank 0 only).

    TensorBoard's arguments are accepted with its defaults; ``flush_secs`` bounds
    the delay to disk (we write every 0.1 s or sooner), and ``purge_step``,
    ``max_queue`` and ``filename_suffix`` change nothing: a step logged again
    replaces the earlier value, the queue is bounded in bytes instead
    (``max_pending_bytes``) and there is no event file. Other keyword arguments go to :class:`~snapshot_store.Recorder`
    (``options``, ``world_size``, ``on_file``, ``rank``, ``flush_interval``...).
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        **recorder_kwargs: Any,
    ) -> None:
        if log_dir is None:  # TensorBoard's default: runs/<date>_<host><comment>
            import socket

            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = Path("runs") / f"{stamp}_{socket.gethostname()}{comment}"
        self.log_dir = str(log_dir)
        recorder_kwargs.setdefault("flush_interval", min(float(flush_secs), _LIVE_SECONDS))
        self._recorder_kwargs = recorder_kwargs
        self._tags: dict[str, tuple[str, str]] = {}  # tag -> (group, name), split once
        self.recorder = self._new_recorder()

    def _new_recorder(self) -> Recorder:
        recorder = Recorder(self.log_dir, **self._recorder_kwargs)
        close_at_exit(self, recorder.close)
        self._log_scalar = recorder.log_scalar  # bound once: add_scalar is the hot path
        return recorder

    def _open_recorder(self) -> Recorder:
        """The recorder, reopened (a new session of the same store) after :meth:`close`."""
        if self.recorder.closed:
            log.info("%s: writing again after close(), as TensorBoard does", self.log_dir)
            self.recorder = self._new_recorder()
        return self.recorder

    def _log_scalar_reopening(
        self, name: str, value: Any, step: int, group: str, wall_time: float | None
    ) -> None:
        """``_log_scalar`` between close() and the next call: reopen, then log."""
        self._open_recorder().log_scalar(name, value, step, group, wall_time)

    def get_logdir(self) -> str:
        """The directory this writer writes to."""
        return self.log_dir

    def _step(self, global_step: int | None) -> int:
        """TensorBoard's step: an event without one has step 0."""
        return 0 if global_step is None else int(global_step)

    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Record one scalar under ``tag`` (``group/name``); a CPU tensor is read now, a CUDA
        one is not synchronised (see :meth:`snapshot_store.Recorder.log` for what that asks)."""
        split = self._tags.get(tag)
        if split is None:
            split = self._tags[tag] = _split_tag(tag)
        if global_step is None:
            global_step = 0  # TensorBoard's default; log_scalar makes any other step an int
        self._log_scalar(split[1], scalar_value, global_step, split[0], walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Record several scalars as traces of one window, ``main_tag``."""
        self._open_recorder().log(
            tag_scalar_dict, self._step(global_step), group=main_tag, wall_time=walltime
        )

    @skips_bad_input
    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Record one image (CHW by default; any layout and scaling TensorBoard accepts)."""
        pixels, layout = tensorboard_pixels(img_tensor, dataformats)
        self._open_recorder().log_image(
            tag, pixels, self._step(global_step), dataformats=layout, wall_time=walltime
        )

    @skips_bad_input
    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Record a batch of images, tiled into one grid."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def flush(self) -> None:
        """Block until everything recorded so far is on disk."""
        self.recorder.flush()

    def close(self) -> None:
        """Flush and mark the run finished; a later ``add_*`` reopens the store, as TensorBoard."""
        self.recorder.close()
        self._log_scalar = self._log_scalar_reopening  # type: ignore[assignment]

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.recorder.close(outcome_of(exc_val))
        self._log_scalar = self._log_scalar_reopening  # type: ignore[assignment]
