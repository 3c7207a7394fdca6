"""What ``SummaryWriter(...)`` is on every rank but global rank 0: a writer whose calls do nothing.

As the store's :class:`~snapshot_store.write.null_recorder.NullRecorder`: the one gate,
:func:`~run_core.launch_env.rank_zero_only`, is asked once, when the writer is made,
and a script calls the same methods on every rank. Nothing is converted, copied or
written, no run is opened and no transfer runner started.
"""

from __future__ import annotations

import os
from typing import Any

from snapshot_store.write.null_recorder import NullRecorder
from trainer.tensorboard.file_writer import FileWriter
from trainer.tensorboard.summary_writer import SummaryWriter


def _records_nothing(self: Any, *args: Any, **kwargs: Any) -> None:
    """Records nothing: this process is not global rank 0."""


class NullSummaryWriter(SummaryWriter):
    """A :class:`~trainer.SummaryWriter` of another rank: TensorBoard's attributes, no effect."""

    def __init__(
        self, log_dir: str | os.PathLike[str] | None = None, *args: Any, **kwargs: Any
    ) -> None:
        self.log_dir = str(log_dir) if log_dir is not None else ""
        self.flush_secs, self.max_queue, self.filename_suffix = 120, 10, ""
        self.purge_step = None
        self.default_bins: list[float] = []
        self.recorder = NullRecorder(self.log_dir)
        self.file_writer: FileWriter | None = FileWriter(self)
        self.all_writers: dict[str, FileWriter] | None = {self.log_dir: self.file_writer}

    # Every method of SummaryWriter that records (a test keeps this list whole).
    add_scalar = add_scalars = add_image = add_images = add_figure = _records_nothing
    add_image_with_boxes = add_text = add_tensor = add_histogram = _records_nothing
    add_histogram_raw = add_video = add_audio = add_graph = add_onnx_graph = _records_nothing
    add_embedding = add_pr_curve = add_pr_curve_raw = add_custom_scalars = _records_nothing
    add_custom_scalars_multilinechart = add_custom_scalars_marginchart = _records_nothing
    add_mesh = add_hparams = add_hparams_row = flush = close = _records_nothing
    __exit__ = _records_nothing
