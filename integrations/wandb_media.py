"""W&B's media types (``Image``, ``Histogram``, ``Table``) and how each logged value is stored.

:func:`store_value` turns one ``run.log`` entry into the SummaryWriter call that
stores its nearest plain form under the same key: numbers as scalars, text as
text, images as images (a list tiled as ``add_images`` tiles), histograms as
histograms, tables as tables (images in cells as PNG images), arrays and tensors of several values as histograms
(W&B makes histograms of them too).
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from run_core.values import plain
from snapshot_store.format.images import encode_png, to_numpy
from trainer import SummaryWriter

log = logging.getLogger(__name__)

MAX_TABLE_ROWS = 10_000  # W&B's Table.MAX_ROWS: a logged table is cut there, with its warning
# Levels of nested dicts one logged dict may have: protobuf's default nesting limit, far
# past any real metrics dict and well within Python's stack (W&B 0.31 takes some hundred
# levels, then ends in RecursionError near Python's 1,000 frames).
MAX_DICT_DEPTH = 100


class AlertLevel(enum.StrEnum):
    """W&B's alert levels."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


class Image:
    """An image as ``wandb.Image`` takes it: a HWC numpy array, a CHW tensor, a PIL image or a path.

    Values are taken as W&B takes them: already in [0, 255] (clipped there).
    ``caption`` is stored with the image; the other keyword arguments are kept, not stored.
    """

    def __init__(
        self, data_or_path: Any, mode: str | None = None, caption: str | None = None, **kwargs: Any
    ) -> None:
        from PIL import Image as PILImage

        if isinstance(data_or_path, (str, os.PathLike)):
            with PILImage.open(data_or_path) as img:
                alpha = img.mode in ("RGBA", "LA", "P")
                array = np.asarray(img.convert(mode or ("RGBA" if alpha else "RGB")))
        elif isinstance(data_or_path, PILImage.Image):
            array = np.asarray(data_or_path.convert(mode) if mode else data_or_path)
        else:
            array = to_numpy(data_or_path)
            if hasattr(data_or_path, "detach") and array.ndim == 3:  # a torch tensor is CHW
                array = array.transpose(1, 2, 0)
            if array.ndim > 2:
                array = array.squeeze()
            array = np.clip(array, 0, 255).astype(np.uint8)
        if array.ndim == 2:
            array = array[:, :, None]
        if array.ndim != 3 or array.shape[2] not in (1, 3, 4):
            raise ValueError(f"an image of shape {array.shape}: expected HW, HWC or CHW")
        self.pixels: np.ndarray = array
        self.caption = caption
        self.mode = mode


class Histogram:
    """A histogram as ``wandb.Histogram`` takes it: values binned, or ``np_histogram``."""

    def __init__(
        self,
        sequence: Sequence[Any] | None = None,
        np_histogram: tuple[Any, Any] | None = None,
        num_bins: int = 64,
    ) -> None:
        if np_histogram is not None:
            counts, edges = (np.asarray(a, dtype=np.float64) for a in np_histogram)
            values = None
        else:
            values = to_numpy(sequence).astype(np.float64).reshape(-1)
            counts, edges = np.histogram(values, bins=num_bins)
        if len(counts) + 1 != len(edges):
            raise ValueError("len(bins) must be len(histogram) + 1")
        self.histogram = [float(c) for c in counts]
        self.bins = [float(e) for e in edges]
        self._values = values

    def raw(self) -> dict[str, Any]:
        """``add_histogram_raw``'s arguments: right bucket edges, and the values' moments
        (from the bucket centres when only counts were given)."""
        counts, edges = np.asarray(self.histogram), np.asarray(self.bins)
        if self._values is not None and len(self._values):
            values, weights = self._values, None
        else:
            values, weights = (edges[:-1] + edges[1:]) / 2, counts
        return {
            "min": float(edges[0]),
            "max": float(edges[-1]),
            "num": float(counts.sum()),
            "sum": float(np.sum(values * (1 if weights is None else weights))),
            "sum_squares": float(np.sum(values**2 * (1 if weights is None else weights))),
            "bucket_limits": edges[1:].tolist(),
            "bucket_counts": counts.tolist(),
        }


class Table:
    """A table as ``wandb.Table`` takes it (``columns``, ``data``, ``dataframe``, ``add_data``);
    stored as a ``table`` record (:meth:`record`)."""

    def __init__(
        self,
        columns: Sequence[str] | None = None,
        data: Sequence[Sequence[Any]] | None = None,
        rows: Sequence[Sequence[Any]] | None = None,
        dataframe: Any = None,
        **kwargs: Any,
    ) -> None:
        if dataframe is not None:
            columns = [str(c) for c in dataframe.columns]
            data = dataframe.values.tolist()
        self.data: list[list[Any]] = [
            list(row) for row in (data if data is not None else rows or [])
        ]
        width = len(self.data[0]) if self.data else 0
        self.columns = list(columns) if columns is not None else [str(i) for i in range(width)]

    def add_data(self, *row: Any) -> None:
        """Append one row (a value per column)."""
        if len(row) != len(self.columns):
            raise ValueError(f"a row of {len(row)} values for {len(self.columns)} columns")
        self.data.append(list(row))

    def get_dataframe(self) -> Any:
        """W&B's: the table as a pandas DataFrame (a column a column, a row a row)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.data, columns=self.columns)

    def record(self) -> dict[str, Any]:
        """The store's ``table`` record: the column names and the rows, each cell as W&B's
        JSON keeps it (:func:`table_cell`); past :data:`MAX_TABLE_ROWS` rows, cut as W&B
        cuts a logged table, with its warning."""
        rows = self.data
        if len(rows) > MAX_TABLE_ROWS:
            log.warning("Truncating wandb.Table object to %d rows.", MAX_TABLE_ROWS)
            rows = rows[:MAX_TABLE_ROWS]
        return {
            "columns": [str(column) for column in self.columns],
            "rows": [[table_cell(value) for value in row] for row in rows],
        }


def table_cell(value: Any) -> Any:
    """One cell as stored: an ``Image`` as PNG bytes, a one-value array or tensor as its
    number (``tensor(2)``: 2), a larger one as a list, text, numbers and None as they are,
    anything else its ``str()``."""
    if isinstance(value, Image):
        return encode_png(value.pixels)
    if value is None or isinstance(value, (bool, int, float, str)):
        return plain(value)
    if hasattr(value, "tolist") and hasattr(value, "shape"):  # numpy's or torch's
        listed = (value.detach().cpu() if hasattr(value, "detach") else value).tolist()
        if isinstance(listed, list):
            return [v if v is None or isinstance(v, (bool, int, float)) else str(v)
                    for v in np.ravel(np.asarray(listed, dtype=object)).tolist()]  # fmt: skip
        return plain(listed)
    return str(value)


def flatten(data: Mapping[str, Any], prefix: str = "", depth: int = 1) -> dict[str, Any]:
    """Nested dicts' keys joined with ``.``, as W&B shows them.

    Raises ValueError for dicts nested more than :data:`MAX_DICT_DEPTH` deep (a dict
    holding itself included), before Python's stack would end in RecursionError.
    """
    if depth > MAX_DICT_DEPTH:
        raise ValueError(
            f"a dict nested more than {MAX_DICT_DEPTH} levels deep (under {prefix[:60]!r}...); "
            "nothing of it is logged"
        )
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}.", depth + 1))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _tiled(images: Sequence[Image]) -> np.ndarray:
    """NHWC pixels of several images, each padded with black to the largest."""
    height = max(i.pixels.shape[0] for i in images)
    width = max(i.pixels.shape[1] for i in images)
    channels = max(i.pixels.shape[2] for i in images)
    batch = np.zeros((len(images), height, width, channels), np.uint8)
    for n, image in enumerate(images):
        h, w, c = image.pixels.shape
        batch[n, :h, :w, :] = (
            image.pixels if c == channels else np.repeat(image.pixels, channels, 2)
        )
    return batch


def number(value: Any) -> float | None:
    """``value`` as a float when it is one number (bool, int, float, numpy or 1-element tensor)."""
    if type(value) is float:  # most logged values: checked first, cheaply
        return value
    if isinstance(value, (bool, int, float, np.number, np.bool_)):
        return float(value)
    if hasattr(value, "shape") and hasattr(value, "item") and int(np.prod(value.shape)) == 1:
        return float(value.item())
    return None


def _captions(images: Sequence[Image]) -> list[str]:
    """The images' captions as W&B's ``captions`` (an empty one for an image without), or
    none when no image has one."""
    captions = [image.caption or "" for image in images]
    return captions if any(captions) else []


def summary_document(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary as the status document keeps it: the structures logged, less media (their
    own records hold them)."""
    media = (Image, Histogram, Table)
    return {
        str(key): summary_value(value)
        for key, value in summary.items()
        if not isinstance(value, media)
        and not (isinstance(value, (list, tuple)) and any(isinstance(v, media) for v in value))
    }


def summary_value(value: Any) -> Any:
    """A summary value as stored: numbers as numbers, dicts and lists as such (their items
    too), anything else None."""
    if isinstance(value, Mapping):
        return {str(k): summary_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [summary_value(v) for v in value]
    if value is None or isinstance(value, (str, bool, int)):
        return plain(value)
    return number(value)


def store_value(writer: SummaryWriter, key: str, value: Any, step: int) -> bool:
    """Store one logged value under ``key`` at ``step``; False when it is of no kind we store."""
    scalar = number(value)
    if scalar is not None:
        writer.add_scalar(key, scalar, step)
    elif isinstance(value, str):
        writer.add_text(key, value, step)
    elif isinstance(value, Image):
        writer.add_image(key, value.pixels, step, dataformats="HWC", captions=_captions([value]))
    elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Image) for v in value):
        writer.add_images(key, _tiled(value), step, dataformats="NHWC", captions=_captions(value))
    elif isinstance(value, Histogram):
        writer.add_histogram_raw(key, global_step=step, **value.raw())
    elif isinstance(value, Table):
        writer.recorder.log_record("table", key, value.record(), step)
    elif hasattr(value, "shape") and hasattr(value, "dtype"):  # an array or tensor
        writer.add_histogram_raw(key, global_step=step, **Histogram(value, num_bins=32).raw())
    else:
        return False
    return True
