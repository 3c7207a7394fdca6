"""A drop-in for ``torch.utils.tensorboard.SummaryWriter``: every method, same signatures.

Switching a script that logs to TensorBoard takes one import::

    from remote_train_monitor import SummaryWriter  # was: from torch.utils.tensorboard import ...

Every tag is stored as written, keyed as :func:`run_core.tags.key_of` says (split at the
first ``/``); which window shows it is the viewer's display rule. Each method beyond
scalars and images builds its record with :mod:`trainer.tensorboard.summaries`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from run_core.endings import ended_state
from run_core.launch_env import rank_zero_only
from run_core.tags import key_of
from snapshot_store import Recorder
from snapshot_store.write.encoders import DEFAULT_BINS
from snapshot_store.write.frame_sink import OnFile
from trainer.tensorboard import summaries
from trainer.tensorboard.bad_input import skips_bad_input
from trainer.tensorboard.file_writer import FileWriter
from trainer.tensorboard.image_formats import figure_pixels, tensorboard_pixels
from trainer.tensorboard.log_dir import default_log_dir, log_dir_run, say_if_appending
from trainer.tensorboard.summaries import Record
from trainer.training.interrupts import close_at_exit

log = logging.getLogger(__name__)

# Written at least this often whatever ``flush_secs`` says: the point is a live view.
_LIVE_SECONDS = 0.1


def _step(global_step: int | None) -> int:
    """TensorBoard's step: an event without one has step 0."""
    return 0 if global_step is None else int(global_step)


class SummaryWriter:
    """Writes the snapshot store directly in ``log_dir`` (rank 0 only).

    TensorBoard's arguments are accepted with its defaults; ``flush_secs`` bounds
    the delay to disk (we write every 0.1 s or sooner), and ``purge_step``,
    ``max_queue`` and ``filename_suffix`` change nothing: a step logged again
    replaces the earlier value, the queue is bounded in bytes instead
    (``max_pending_bytes``) and there is no event file. Ours, keyword-only:
    ``remote_transfer_cmd`` and ``transfer_root`` (see :func:`~.log_dir.log_dir_run`),
    ``alert_rules``, ``alert_webhook``, ``alert_cmd`` (:func:`~.log_dir.alerts_of`); the
    rest go to :class:`~snapshot_store.Recorder` (``options``, ``world_size``, ``on_file``...).
    A second process on ``log_dir`` is refused (:class:`~run_core.run_lock.RunLockError`, one
    line naming the first's PID); on a rank other than 0 the writer is a
    :class:`~trainer.tensorboard.null_writer.NullSummaryWriter`, whose calls do nothing.

    What code reaches past the API for is there as in TensorBoard: ``file_writer``
    (also ``_get_file_writer()`` and ``all_writers[log_dir]``) takes the summaries
    ``torch.utils.tensorboard.summary.*`` builds (see :mod:`trainer.tensorboard.file_writer`);
    ``flush_secs``, ``max_queue``, ``filename_suffix``, ``default_bins`` and
    ``purge_step`` (None once the writer is open, as TensorBoard leaves it).
    """

    def __new__(cls, *args: Any, rank: int | None = None, **kwargs: Any) -> SummaryWriter:
        """A SummaryWriter on global rank 0, a NullSummaryWriter (a subclass) elsewhere."""
        from trainer.tensorboard.null_writer import NullSummaryWriter

        return super().__new__(rank_zero_only(cls, NullSummaryWriter, rank))

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        *,
        remote_transfer_cmd: str | None = None,
        transfer_root: str | os.PathLike[str] | None = None,
        **recorder_kwargs: Any,
    ) -> None:
        self.log_dir = str(default_log_dir(comment) if log_dir is None else log_dir)
        self.flush_secs = flush_secs
        self.max_queue = max_queue
        self.filename_suffix = filename_suffix
        self.purge_step = None  # TensorBoard's: consumed when its file writer opens
        self.default_bins = DEFAULT_BINS.tolist()  # add_histogram's "tensorflow" bins
        self.file_writer: FileWriter | None = FileWriter(self)
        self.all_writers: dict[str, FileWriter] | None = {self.log_dir: self.file_writer}
        recorder_kwargs.setdefault("flush_interval", min(float(flush_secs), _LIVE_SECONDS))
        recorder_kwargs.setdefault("instead", "give this writer another log_dir")
        recorder_kwargs["rank"] = 0  # this is rank 0's writer: __new__ asked
        self._on_file: OnFile | None = recorder_kwargs.pop("on_file", None)
        if self._on_file is not None and remote_transfer_cmd:
            raise ValueError("give on_file or remote_transfer_cmd, not both")
        self._recorder_kwargs = recorder_kwargs
        self._tags: dict[str, tuple[str, str]] = {}  # tag -> store key, split once
        run_dir, cmd, root = Path(self.log_dir), remote_transfer_cmd, transfer_root
        self.writing_run = log_dir_run(run_dir, self._open_store, cmd, root, recorder_kwargs)
        say_if_appending(Path(self.log_dir))  # once: a reopen after close() is this run's own
        self.recorder: Recorder = self.writing_run.open().recorder
        close_at_exit(self, self.writing_run.close)

    def _open_store(self, on_file: OnFile | None) -> Recorder:
        """The writing run's ``open_store``: the recorder, its files told to the transfer
        hook's runner (``on_file``) or to the ``on_file`` this writer was given."""
        return Recorder(self.log_dir, on_file=on_file or self._on_file, **self._recorder_kwargs)

    def _open_recorder(self) -> Recorder:
        """The recorder; after :meth:`close`, the run opened again (a new session of the
        same store, as TensorBoard writes again after close)."""
        if self.recorder.closed:
            log.info("%s: writing again after close(), as TensorBoard does", self.log_dir)
            self.recorder = self.writing_run.open().recorder
        return self.recorder

    def _get_file_writer(self) -> FileWriter:
        """TensorBoard's default file writer (made again when code set it to None)."""
        if self.file_writer is None or self.all_writers is None:
            self.file_writer = FileWriter(self)
            self.all_writers = {self.log_dir: self.file_writer}
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory this writer writes to."""
        return self.log_dir

    def _write(self, record: Record, global_step: int | None, walltime: float | None) -> None:
        """Hand one summary's record to the recorder."""
        kind, tag, value, encode = record
        recorder = self._open_recorder()
        recorder.log_record(kind, tag, value, _step(global_step), wall_time=walltime, encode=encode)

    def add_scalar(
        self, tag: str, scalar_value: Any, global_step: int | None = None,
        walltime: float | None = None, new_style: bool = False, double_precision: bool = False,
    ) -> None:  # fmt: skip
        """Record one scalar under ``tag``; a CPU tensor is read now, a CUDA one is not
        synchronised (see :meth:`snapshot_store.Recorder.log` for what that asks)."""
        split = self._tags.get(tag)
        if split is None:
            split = self._tags[tag] = key_of(tag)
        if global_step is None:
            global_step = 0  # TensorBoard's default; log_scalar makes any other step an int
        recorder = self.recorder
        if recorder.closed:
            recorder = self._open_recorder()
        recorder.log_scalar(split[1], scalar_value, global_step, split[0], walltime)

    def add_scalars(
        self, main_tag: str, tag_scalar_dict: Mapping[str, Any], global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:  # fmt: skip
        """Record several scalars as traces of one window, ``main_tag``."""
        step = _step(global_step)
        self._open_recorder().log(tag_scalar_dict, step, group=main_tag, wall_time=walltime)

    @skips_bad_input
    def add_image(
        self, tag: str, img_tensor: Any, global_step: int | None = None,
        walltime: float | None = None, dataformats: str = "CHW", *, captions: Sequence[str] = (),
    ) -> None:  # fmt: skip
        """Record one image (CHW by default; any layout and scaling TensorBoard accepts);
        ``captions`` (ours, not TensorBoard's: W&B's) are stored with it, one an image."""
        pixels, layout = tensorboard_pixels(img_tensor, dataformats)
        (group, name), step = key_of(tag), _step(global_step)
        recorder = self._open_recorder()
        recorder.log_image(name, pixels, step, None, group, layout, walltime, captions=captions)

    @skips_bad_input
    def add_images(
        self, tag: str, img_tensor: Any, global_step: int | None = None,
        walltime: float | None = None, dataformats: str = "NCHW", *, captions: Sequence[str] = (),
    ) -> None:  # fmt: skip
        """Record a batch of images, tiled into one grid (``captions``: one an image)."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats, captions=captions)

    @skips_bad_input
    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Record a matplotlib figure (or a list of them, tiled) as an image."""
        figures = figure if isinstance(figure, list) else [figure]
        pixels = np.stack([figure_pixels(f, close) for f in figures])
        (group, name), step = key_of(tag), _step(global_step)
        self._open_recorder().log_image(name, pixels, step, None, group, "NHWC", walltime)

    @skips_bad_input
    def add_image_with_boxes(
        self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
        dataformats="CHW", labels=None,
    ) -> None:  # fmt: skip
        """Record an image with its boxes (x1, y1, x2, y2) drawn in red, labels at their corners."""
        record = summaries.image_with_boxes(
            tag, img_tensor, box_tensor, rescale, dataformats, labels
        )
        self._write(record, global_step, walltime)

    @skips_bad_input
    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Record a text (Markdown in TensorBoard; shown as text)."""
        self._write(summaries.text(tag, text_string), global_step, walltime)

    @skips_bad_input
    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        """Record a tensor's shape, dtype and values."""
        self._write(summaries.tensor(tag, tensor), global_step, walltime)

    @skips_bad_input
    def add_histogram(
        self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ) -> None:
        """Record a histogram, bucketed on the writer thread as TensorBoard buckets it."""
        self._write(summaries.histogram(tag, values, bins, max_bins), global_step, walltime)

    @skips_bad_input
    def add_histogram_raw(
        self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
        global_step=None, walltime=None,
    ) -> None:  # fmt: skip
        """Record a histogram already bucketed: ``bucket_limits`` are right edges, one per count."""
        record = summaries.histogram_raw(
            tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._write(record, global_step, walltime)

    @skips_bad_input
    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Record a video batch (N, T, C, H, W) as an animated GIF."""
        self._write(summaries.video(tag, vid_tensor, fps), global_step, walltime)

    @skips_bad_input
    def add_audio(
        self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None
    ) -> None:
        """Record mono audio in [-1, 1] as a 16-bit WAV."""
        self._write(summaries.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    @skips_bad_input
    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """Record the graph TensorBoard traces of ``model`` run on ``input_to_model``, and the
        model's outline, under tag ``graph``; a model that can not be traced: one warning."""
        self._write(summaries.graph(model, input_to_model, verbose, use_strict_trace), None, None)

    @skips_bad_input
    def add_onnx_graph(self, prototxt) -> None:
        """Record which ONNX file was given, and its size, as text under tag ``onnx_graph``."""
        self._write(summaries.onnx_graph(prototxt), None, None)

    @skips_bad_input
    def add_embedding(
        self, mat, metadata=None, label_img=None, global_step=None, tag="default",
        metadata_header=None,
    ) -> None:  # fmt: skip
        """Record an embedding as TensorBoard's projector keeps it (features, metadata, sprite)
        and its first two principal components; ``export --kind projector`` writes its files."""
        record = summaries.embedding(tag, mat, metadata, label_img, metadata_header)
        self._write(record, global_step, None)

    @skips_bad_input
    def add_pr_curve(
        self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Record a precision-recall curve, binned on the writer thread as TensorBoard bins it."""
        record = summaries.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._write(record, global_step, walltime)

    @skips_bad_input
    def add_pr_curve_raw(
        self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
        false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
        weights=None, walltime=None,
    ) -> None:  # fmt: skip
        """Record a precision-recall curve already computed (one value per threshold)."""
        columns = (true_positive_counts, false_positive_counts, true_negative_counts,
                   false_negative_counts, precision, recall)  # fmt: skip
        self._write(summaries.pr_curve_raw(tag, columns, num_thresholds), global_step, walltime)

    @skips_bad_input
    def add_custom_scalars(self, layout) -> None:
        """Record a layout ``{category: {title: ["Multiline" | "Margin", [tags]]}}``."""
        self._write(summaries.custom_scalars(layout), None, None)

    @skips_bad_input
    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled") -> None:
        """Record a layout of one chart drawing ``tags`` as lines."""
        self._write(summaries.one_chart("Multiline", tags, category, title), None, None)

    @skips_bad_input
    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled") -> None:
        """Record a layout of one margin chart: ``tags`` are value, lower and upper bound."""
        self._write(summaries.one_chart("Margin", tags, category, title), None, None)

    @skips_bad_input
    def add_mesh(
        self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
        walltime=None,
    ) -> None:  # fmt: skip
        """Record the first mesh of a batch: vertices (B, N, 3), faces (B, M, 3), colors (B, N, 3)."""
        self._write(summaries.mesh(tag, vertices, faces, colors), global_step, walltime)

    @skips_bad_input
    def add_hparams(
        self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None
    ) -> None:
        """Record hyperparameters and their metrics: one row of the hparams table per call
        (tag ``run_name``, default ``hparams``); the metrics are also scalars in group
        ``hparams``, as TensorBoard logs them."""
        metrics = summaries.hparams_metrics(hparam_dict, metric_dict)
        self._write(summaries.hparams_row(hparam_dict, metrics, run_name), global_step, None)
        if metrics:
            step = _step(global_step)
            self._open_recorder().log(metrics, step, group="hparams")

    def add_hparams_row(
        self, hparam_dict: Mapping[str, Any], metrics: dict[str, float], run_name: str | None,
        global_step: int | None, walltime: float | None = None,
    ) -> None:  # fmt: skip
        """Record one row of the hparams table, without the metrics as scalars (a W&B run's
        config and summary); a NaN metric's value is the scalar of that tag."""
        self._write(summaries.hparams_row(hparam_dict, metrics, run_name), global_step, walltime)

    def flush(self) -> None:
        """Block until everything recorded so far is on disk."""
        self._end_hparams_session()
        self.recorder.flush()

    def close(self) -> None:
        """Flush, mark the run finished and free the store (what the transfer hook holds is
        sent); a later ``add_*`` opens it again, as TensorBoard."""
        self._end_hparams_session()
        self.writing_run.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self._end_hparams_session()
        self.writing_run.close(ended_state(exc_val))

    def _end_hparams_session(self) -> None:
        """An hparams session given to the file writer and not ended is a row now."""
        if self.file_writer is not None:
            self.file_writer.end_session()
