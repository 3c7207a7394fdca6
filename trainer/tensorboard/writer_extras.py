"""The SummaryWriter methods beyond scalars and images: each stores the nearest plain form.

Heavy work (histogram bucketing, PR-curve binning, PNG/GIF/WAV encoding, the
embedding's projection) runs on the recorder's writer thread: the calling
thread only takes a private copy of the input (a ``clone`` of a tensor, which
for a GPU tensor is queued, not waited for). A figure is rendered here, on the
calling thread, as TensorBoard does (matplotlib is not thread-safe).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from run_core.redaction import redact
from run_core.tags import key_of
from run_core.values import plain
from snapshot_store.format.kinds import HPARAMS_TAG
from snapshot_store.write import encoders
from snapshot_store.write.recorder import Encoder, Recorder
from trainer.tensorboard.bad_input import skips_bad_input
from trainer.tensorboard.image_formats import figure_pixels, tensorboard_pixels

log = logging.getLogger(__name__)


def private_copy(value: Any) -> Any:
    """A copy the caller may change at once: a queued ``clone`` for a tensor, numpy otherwise."""
    if hasattr(value, "detach") and hasattr(value, "clone"):  # a torch tensor, duck-typed
        return value.detach().clone()
    if isinstance(value, str):
        raise TypeError(f"expected numbers, got the string {value[:40]!r}")
    return np.array(value, copy=True)


def _one_number(value: Any, what: str) -> float:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    return float(value)


def _hparam_value(value: Any) -> Any:
    """int, float, str, bool or None as stored; a one-element tensor its number, else its text."""
    if hasattr(value, "item") and hasattr(value, "shape") and int(np.prod(value.shape)) == 1:
        value = value.item()
    value = plain(value)
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


class WriterExtras:
    """Mixin of :class:`~trainer.SummaryWriter`: every method TensorBoard has besides scalars and images."""

    def _open_recorder(self) -> Recorder:  # provided by SummaryWriter
        raise NotImplementedError

    def _step(self, global_step: int | None) -> int:  # provided by SummaryWriter
        raise NotImplementedError

    def _record(
        self,
        kind: str,
        tag: str,
        value: Any,
        global_step: int | None,
        walltime: float | None = None,
        encode: Encoder | None = None,
    ) -> None:
        self._open_recorder().log_record(
            kind, tag, value, self._step(global_step), wall_time=walltime, encode=encode
        )

    @skips_bad_input
    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Record a text (Markdown in TensorBoard; shown as text)."""
        if not isinstance(text_string, str):
            raise TypeError(f"text must be str, not {type(text_string).__name__}")
        self._record("text", tag, {"text": text_string}, global_step, walltime)

    @skips_bad_input
    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        """Record a tensor's shape, dtype and values."""
        self._record("tensor", tag, private_copy(tensor), global_step, walltime, encoders.tensor)

    @skips_bad_input
    def add_histogram(
        self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None
    ) -> None:
        """Record a histogram, bucketed on the writer thread as TensorBoard buckets it."""
        if not isinstance(bins, (str, int)):
            bins = np.array(bins, dtype=np.float64)
        elif isinstance(bins, str) and bins != "tensorflow":
            np.histogram_bin_edges(np.zeros(1), bins)  # an unknown numpy rule raises here
        raw = (private_copy(values), bins, max_bins)
        self._record("histogram", tag, raw, global_step, walltime, encoders.histogram)

    @skips_bad_input
    def add_histogram_raw(
        self,
        tag,
        min,
        max,
        num,
        sum,
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step=None,
        walltime=None,
    ) -> None:
        """Record a histogram already bucketed: ``bucket_limits`` are right edges, one per count."""
        limits = [_one_number(v, "a bucket limit") for v in bucket_limits]
        counts = [_one_number(v, "a bucket count") for v in bucket_counts]
        if len(limits) != len(counts):
            raise ValueError(f"{len(limits)} bucket limits for {len(counts)} counts")
        data = {
            "min": _one_number(min, "min"),
            "max": _one_number(max, "max"),
            "num": _one_number(num, "num"),
            "sum": _one_number(sum, "sum"),
            "sum_squares": _one_number(sum_squares, "sum_squares"),
            "limits": limits,
            "counts": counts,
        }
        self._record("histogram", tag, data, global_step, walltime)

    @skips_bad_input
    def add_image_with_boxes(
        self,
        tag,
        img_tensor,
        box_tensor,
        global_step=None,
        walltime=None,
        rescale=1,
        dataformats="CHW",
        labels=None,
    ) -> None:
        """Record an image with its boxes (x1, y1, x2, y2) drawn in red, labels at their corners."""
        pixels, layout = tensorboard_pixels(img_tensor, dataformats)
        raw = (pixels, private_copy(box_tensor), layout, rescale, labels)
        self._record("image", tag, raw, global_step, walltime, encoders.boxes)

    @skips_bad_input
    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Record a matplotlib figure (or a list of them, tiled) as an image."""
        figures = figure if isinstance(figure, list) else [figure]
        pixels = np.stack([figure_pixels(f, close) for f in figures])
        (group, name), step = key_of(tag), self._step(global_step)
        self._open_recorder().log_image(name, pixels, step, None, group, "NHWC", walltime)

    @skips_bad_input
    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Record a video batch (N, T, C, H, W) as an animated GIF."""
        self._record(
            "video", tag, (private_copy(vid_tensor), fps), global_step, walltime, encoders.gif
        )

    @skips_bad_input
    def add_audio(
        self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None
    ) -> None:
        """Record mono audio in [-1, 1] as a 16-bit WAV."""
        raw = (private_copy(snd_tensor), sample_rate)
        self._record("audio", tag, raw, global_step, walltime, encoders.wav)

    @skips_bad_input
    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """Record the module tree of ``model`` as text under tag ``graph`` (no tracing)."""
        lines = [repr(model)]
        if hasattr(model, "parameters"):
            count = sum(p.numel() for p in model.parameters())
            lines.append(f"\n{count:,} parameters")
        self._record("text", "graph", {"text": "\n".join(lines)}, None)

    @skips_bad_input
    def add_onnx_graph(self, prototxt) -> None:
        """Record which ONNX file was given, and its size, as text under tag ``onnx_graph``."""
        path = Path(os.fspath(prototxt))
        text = f"ONNX graph {path} ({path.stat().st_size:,} bytes)"
        self._record("text", "onnx_graph", {"text": text}, None)

    @skips_bad_input
    def add_embedding(
        self,
        mat,
        metadata=None,
        label_img=None,
        global_step=None,
        tag="default",
        metadata_header=None,
    ) -> None:
        """Record an embedding's 2-D projection (its first two principal components)."""
        labels = None
        if metadata is not None:
            rows = [m if isinstance(m, (list, tuple)) else [m] for m in metadata]
            labels = ["\t".join(str(v) for v in row) for row in rows]
        raw = (private_copy(mat), labels)
        self._record("points", tag, raw, global_step, None, encoders.points_2d)

    @skips_bad_input
    def add_pr_curve(
        self,
        tag,
        labels,
        predictions,
        global_step=None,
        num_thresholds=127,
        weights=None,
        walltime=None,
    ) -> None:
        """Record a precision-recall curve, binned on the writer thread as TensorBoard bins it."""
        raw = (
            private_copy(labels),
            private_copy(predictions),
            num_thresholds,
            None if weights is None else private_copy(weights),
        )
        self._record("pr_curve", tag, raw, global_step, walltime, encoders.pr_curve)

    @skips_bad_input
    def add_pr_curve_raw(
        self,
        tag,
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
        global_step=None,
        num_thresholds=127,
        weights=None,
        walltime=None,
    ) -> None:
        """Record a precision-recall curve already computed (one value per threshold)."""
        columns = (
            true_positive_counts,
            false_positive_counts,
            true_negative_counts,
            false_negative_counts,
            precision,
            recall,
        )
        data: dict[str, Any] = {
            name: np.asarray(col, dtype=np.float64).reshape(-1).tolist()
            for name, col in zip(
                ("tp", "fp", "tn", "fn", "precision", "recall"), columns, strict=True
            )
        }
        data["num_thresholds"] = int(num_thresholds)
        self._record("pr_curve", tag, data, global_step, walltime)

    @skips_bad_input
    def add_custom_scalars(self, layout) -> None:
        """Record a layout ``{category: {title: ["Multiline" | "Margin", [tags]]}}``."""
        plain_layout = {
            str(category): {
                str(title): [chart[0], [str(t) for t in chart[1]]]
                for title, chart in charts.items()
            }
            for category, charts in layout.items()
        }
        self._record("layout", "custom_scalars", {"layout": plain_layout}, None)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled") -> None:
        """Record a layout of one chart drawing ``tags`` as lines."""
        self.add_custom_scalars({category: {title: ["Multiline", list(tags)]}})

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled") -> None:
        """Record a layout of one margin chart: ``tags`` are value, lower and upper bound."""
        if len(tags) != 3:
            log.warning(
                "add_custom_scalars_marginchart: %d tags; expected 3, not recorded", len(tags)
            )
            return
        self.add_custom_scalars({category: {title: ["Margin", list(tags)]}})

    @skips_bad_input
    def add_mesh(
        self,
        tag,
        vertices,
        colors=None,
        faces=None,
        config_dict=None,
        global_step=None,
        walltime=None,
    ) -> None:
        """Record the first mesh of a batch: vertices (B, N, 3), faces (B, M, 3), colors (B, N, 3)."""
        raw = tuple(None if v is None else private_copy(v) for v in (vertices, faces, colors))
        self._record("mesh", tag, raw, global_step, walltime, encoders.mesh)

    @skips_bad_input
    def add_hparams(
        self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None
    ) -> None:
        """Record hyperparameters and their metrics: one row of the hparams table per call
        (tag ``run_name``, default ``hparams``); the metrics are also scalars in group
        ``hparams``, as TensorBoard logs them."""
        if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
            raise TypeError("hparam_dict and metric_dict should be dictionaries")
        metrics = {str(k): _one_number(v, f"metric {k!r}") for k, v in metric_dict.items()}
        self.add_hparams_row(hparam_dict, metrics, run_name, global_step)
        if metrics:
            self._open_recorder().log(metrics, self._step(global_step), group="hparams")

    def add_hparams_row(
        self,
        hparam_dict: Mapping[str, Any],
        metrics: dict[str, float],
        run_name: str | None,
        global_step: int | None,
        walltime: float | None = None,
    ) -> None:
        """Record one row of the hparams table, without the metrics as scalars (a W&B run's
        config and summary); a NaN metric's value is the scalar of that tag."""
        hparams = redact({str(k): _hparam_value(v) for k, v in hparam_dict.items()})
        tag = str(run_name) if run_name else HPARAMS_TAG
        self._record(
            "hparams", tag, {"hparams": hparams, "metrics": metrics}, global_step, walltime
        )
