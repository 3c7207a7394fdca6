"""TensorBoard's ``FileWriter`` as code reaches it: ``writer.file_writer`` / ``_get_file_writer()``.

Scripts build summaries with ``torch.utils.tensorboard.summary.*`` (``hparams()``,
``scalar()``, ``histogram()``, ``image()``, ``text()``, ...) and hand them to
``add_summary`` or ``add_event``. Here each summary value is decoded into the
record our :class:`~trainer.SummaryWriter` writes for the matching ``add_*``
method, so the store holds what it would hold had the script called that method.

The hparams plugin's three summaries (experiment, session start, session end)
make one hparams row of the writer's own run (tag ``.``, as TensorBoard names
the log dir's own run; a later session replaces it, as there). The experiment
names the metrics but carries no values: TensorBoard takes each from the
scalar logged under that tag, so the row stores NaN for it and the viewer
shows the last value of that scalar (see :mod:`snapshot_store.format.kinds`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from snapshot_store.format.images import decode_png
from snapshot_store.format.kinds import OWN_RUN_TAG
from snapshot_store.format.schema import int64_step
from trainer.tensorboard.summary_payloads import hparams_data, wav_samples

log = logging.getLogger(__name__)

HPARAMS_PREFIX = "_hparams_/"
TEXT_SUFFIX = "/text_summary"  # torch's text() adds it; add_text's tag is without
UNKNOWN = float("nan")  # an hparams metric whose value is its scalar's (TensorBoard's rule)


class FileWriter:
    """Accepts TensorBoard ``Summary`` and ``Event`` protobufs for one :class:`SummaryWriter`."""

    def __init__(self, writer: Any) -> None:
        # ``writer`` is the trainer.SummaryWriter that owns this one (not imported: it imports us).
        self._writer = writer
        self._metric_names: list[str] = []  # from the last experiment summary
        self._bool_hparams: set[str] = set()
        self._session: dict[str, Any] | None = None  # a started session, not yet a row
        self._session_at: tuple[int | None, float | None] = (None, None)
        self._warned: set[str] = set()  # tags warned about: one warning each, not one per call

    def get_logdir(self) -> str:
        """The directory the writer writes to."""
        return self._writer.get_logdir()

    def add_event(self, event: Any, step: int | None = None, walltime: float | None = None) -> None:
        """Record the summary an ``Event`` carries (other events say nothing we store)."""
        if event.HasField("summary"):
            step = event.step if step is None else step
            walltime = (event.wall_time or None) if walltime is None else walltime
            self.add_summary(event.summary, step, walltime)

    def add_summary(
        self, summary: Any, global_step: int | None = None, walltime: float | None = None
    ) -> None:
        """Record each value of a ``Summary`` as the matching ``add_*`` method would.

        A step outside int64 raises TensorBoard's ValueError, recording nothing.
        """
        if global_step is not None:
            global_step = int64_step(global_step)
        for value in summary.value:
            try:
                self._add_value(value, global_step, walltime)
            except (ValueError, TypeError) as err:
                self._warn(value.tag, f"{err}; that value is not recorded")

    def _warn(self, tag: str, what: str) -> None:
        if tag not in self._warned:
            self._warned.add(tag)
            log.warning("add_summary(%r): %s (warned once per tag)", tag, what)

    def _add_value(self, value: Any, step: int | None, walltime: float | None) -> None:
        writer, tag = self._writer, value.tag
        plugin = value.metadata.plugin_data.plugin_name
        field = value.WhichOneof("value")
        if plugin == "hparams":
            self._hparams(tag, value.metadata.plugin_data.content, step, walltime)
        elif field == "simple_value":
            writer.add_scalar(tag, value.simple_value, step, walltime)
        elif field == "histo":
            h = value.histo
            writer.add_histogram_raw(
                tag, h.min, h.max, h.num, h.sum, h.sum_squares,
                list(h.bucket_limit), list(h.bucket), step, walltime,
            )  # fmt: skip
        elif field == "image":
            pixels = decode_png(value.image.encoded_image_string)
            writer.add_image(tag, pixels, step, walltime, dataformats="HWC")
        elif field == "audio":
            samples, rate = wav_samples(value.audio.encoded_audio_string)
            writer.add_audio(tag, samples, step, rate, walltime)
        elif field == "tensor" and plugin == "text":
            text = b"\n".join(value.tensor.string_val).decode("utf-8", "replace")
            writer.add_text(tag.removesuffix(TEXT_SUFFIX), text, step, walltime)
        elif field == "tensor" and plugin in ("scalars", ""):
            numbers = list(value.tensor.float_val) or list(value.tensor.double_val)
            if len(numbers) != 1:
                raise ValueError(f"a scalar tensor holds {len(numbers)} values")
            writer.add_scalar(tag, numbers[0], step, walltime)
        elif field == "tensor" and plugin == "pr_curves":
            self._pr_curve(tag, value.tensor, step, walltime)
        else:
            self._warn(tag, f"a {plugin or field} summary is not stored")

    def _pr_curve(self, tag: str, tensor: Any, step: int | None, walltime: float | None) -> None:
        """torch's pr_curve(): a (6, thresholds) tensor: tp, fp, tn, fn, precision, recall."""
        rows = np.asarray(tensor.float_val, dtype=np.float64)
        thresholds = rows.size // 6
        if thresholds == 0 or rows.size % 6:
            raise ValueError(f"a PR curve of {rows.size} values is not 6 rows")
        tp, fp, tn, fn, precision, recall = rows.reshape(6, thresholds)
        self._writer.add_pr_curve_raw(
            tag, tp, fp, tn, fn, precision, recall, step, thresholds, walltime=walltime
        )

    def _hparams(self, tag: str, content: bytes, step: int | None, walltime: float | None) -> None:
        """One of the hparams plugin's summaries: experiment, session start or session end."""
        # Only reached with a summary torch's hparams() built, so tensorboard is installed.
        from tensorboard.plugins.hparams import api_pb2  # type: ignore[import-untyped]

        data = hparams_data(content)
        which = data.WhichOneof("data")
        if which == "experiment":
            self._metric_names = [m.name.tag for m in data.experiment.metric_infos]
            self._bool_hparams = {
                h.name for h in data.experiment.hparam_infos if h.type == api_pb2.DATA_TYPE_BOOL
            }
        elif which == "session_start_info":
            self.end_session()
            self._session = {
                name: self._hparam(name, v) for name, v in data.session_start_info.hparams.items()
            }
            self._session_at = (step, walltime)
        elif which == "session_end_info":
            self.end_session()
        else:
            log.warning("add_summary(%r): an hparams summary without data is not stored", tag)

    def _hparam(self, name: str, value: Any) -> Any:
        kind = value.WhichOneof("kind")
        if kind == "number_value":
            return bool(value.number_value) if name in self._bool_hparams else value.number_value
        if kind in ("string_value", "bool_value"):
            return getattr(value, kind)
        return None

    def end_session(self) -> None:
        """Store a started session as one hparams row, its metrics taken from their scalars."""
        if self._session is None:
            return
        hparams, self._session = self._session, None
        metrics = dict.fromkeys(self._metric_names, UNKNOWN)
        step, walltime = self._session_at
        self._writer.add_hparams_row(hparams, metrics, OWN_RUN_TAG, step, walltime)

    def flush(self) -> None:
        """Store a session still open as its row, then wait until everything is on disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the writer (a later ``add_*`` reopens it, as TensorBoard's does)."""
        self._writer.close()
