"""A drop-in for ``torch.utils.tensorboard.SummaryWriter``: every method, same signatures.

Switching a script that logs to TensorBoard takes one import::

    from remote_train_monitor import SummaryWriter  # was: from torch.utils.tensorboard import ...

Every tag is stored, exported and shown as written: the store keys it as
:func:`run_core.tags.key_of` says (split at the first ``/``, nothing
renamed), and which window shows it is the viewer's display rule. The methods beyond scalars and images are in :mod:`trainer.tensorboard.writer_extras`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from run_core.endings import ended_state
from run_core.launch_env import global_rank
from run_core.tags import key_of
from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from snapshot_store.write.encoders import DEFAULT_BINS
from trainer.tensorboard.bad_input import skips_bad_input
from trainer.tensorboard.file_writer import FileWriter
from trainer.tensorboard.image_formats import tensorboard_pixels
from trainer.tensorboard.writer_extras import WriterExtras
from trainer.training.interrupts import close_at_exit

log = logging.getLogger(__name__)

# Our writer thread writes at least this often whatever ``flush_secs`` says: the
# point is a live view (TensorBoard's 120 s default only bounds the delay).
_LIVE_SECONDS = 0.1


def _say_if_appending(store: Path) -> None:
    """One line when ``store`` holds a run that ended: this writer adds a session to it.

    TensorBoard merges writers of one log_dir too; a second experiment given the first's
    log_dir mixes two runs' curves and options, which a user should hear of at the start.
    """
    if global_rank() != 0:
        return
    try:
        status = fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), store)
    except (OSError, fmt.StoreError):
        return  # a new store (or one the recorder will say is damaged)
    state = status.get("state")
    if state in fmt.ENDED_STATES:
        log.warning(
            "%s holds a run that %s: this writer appends to it as a new session, as "
            "TensorBoard merges writers of one log_dir; give a new log_dir for a new run",
            store,
            "was stopped" if state == "stopped" else state,
        )


class SummaryWriter(WriterExtras):
    """Writes the snapshot store directly in ``log_dir`` (rank 0 only).

    TensorBoard's arguments are accepted with its defaults; ``flush_secs`` bounds
    the delay to disk (we write every 0.1 s or sooner), and ``purge_step``,
    ``max_queue`` and ``filename_suffix`` change nothing: a step logged again
    replaces the earlier value, the queue is bounded in bytes instead
    (``max_pending_bytes``) and there is no event file. Other keyword arguments go to :class:`~snapshot_store.Recorder`
    (``options``, ``world_size``, ``on_file``, ``rank``, ``flush_interval``...).

    What code reaches past the API for is there as in TensorBoard: ``file_writer``
    (also ``_get_file_writer()`` and ``all_writers[log_dir]``) takes the summaries
    ``torch.utils.tensorboard.summary.*`` builds (see :mod:`trainer.tensorboard.file_writer`);
    ``flush_secs``, ``max_queue``, ``filename_suffix``, ``default_bins`` and
    ``purge_step`` (None once the writer is open, as TensorBoard leaves it).
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
        self.flush_secs = flush_secs
        self.max_queue = max_queue
        self.filename_suffix = filename_suffix
        self.purge_step = None  # TensorBoard's: consumed when its file writer opens
        self.default_bins = DEFAULT_BINS.tolist()  # add_histogram's "tensorflow" bins
        self.file_writer: FileWriter | None = FileWriter(self)
        self.all_writers: dict[str, FileWriter] | None = {self.log_dir: self.file_writer}
        recorder_kwargs.setdefault("flush_interval", min(float(flush_secs), _LIVE_SECONDS))
        self._recorder_kwargs = recorder_kwargs
        self._tags: dict[str, tuple[str, str]] = {}  # tag -> store key, split once
        _say_if_appending(Path(self.log_dir))  # once: a reopen after close() is this run's own
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

    def _get_file_writer(self) -> FileWriter:
        """TensorBoard's default file writer (made again when code set it to None)."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self)
            self.all_writers = {self.log_dir: self.file_writer}
        return self.file_writer

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
        """Record one scalar under ``tag``; a CPU tensor is read now, a CUDA one is not
        synchronised (see :meth:`snapshot_store.Recorder.log` for what that asks)."""
        split = self._tags.get(tag)
        if split is None:
            split = self._tags[tag] = key_of(tag)
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
        group, name = key_of(tag)
        self._open_recorder().log_image(
            name,
            pixels,
            self._step(global_step),
            group=group,
            dataformats=layout,
            wall_time=walltime,
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
        self._end_hparams_session()
        self.recorder.flush()

    def close(self) -> None:
        """Flush and mark the run finished; a later ``add_*`` reopens the store, as TensorBoard."""
        self._end_hparams_session()
        self.recorder.close()
        self._log_scalar = self._log_scalar_reopening  # type: ignore[assignment]

    def __enter__(self) -> SummaryWriter:
        return self

    def _end_hparams_session(self) -> None:
        """An hparams session given to the file writer and not ended is a row now."""
        if self.file_writer is not None:
            self.file_writer.end_session()

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self._end_hparams_session()
        self.recorder.close(ended_state(exc_val))
        self._log_scalar = self._log_scalar_reopening  # type: ignore[assignment]
