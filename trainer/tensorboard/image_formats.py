"""Images as TensorBoard reads them: any order of the letters of ``dataformats``, its scaling.

TensorBoard's ``convert_to_HWC`` accepts every permutation (``CHW``, ``HWC``,
``WHC``, ``NCHW``, ``NHWC``, ``HW``, ``WH``...) and multiplies every image that
is not uint8 by 255 before clipping to [0, 255] and truncating: floats are
taken as [0, 1]. We do the same, then hand the recorder HWC or NHWC uint8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from snapshot_store.format.images import to_numpy

_TARGET = {2: "HW", 3: "HWC", 4: "NHWC"}


def tensorboard_pixels(image: Any, dataformats: str) -> tuple[np.ndarray, str]:
    """``(uint8 pixels, "HWC" or "NHWC")`` of ``image`` laid out as ``dataformats`` says.

    Raises ValueError naming the shape and format when they do not agree.
    """
    array = to_numpy(image)
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW") or len(fmt) not in _TARGET:
        raise ValueError(f"dataformats {dataformats!r} is not a layout of N, C, H and W")
    target = _TARGET[len(fmt)] if "C" in fmt or len(fmt) == 2 else "NHW"
    if set(fmt) != set(target):
        raise ValueError(f"dataformats {dataformats!r} is not a layout TensorBoard accepts")
    if array.ndim != len(fmt):
        raise ValueError(f"image of shape {array.shape} does not match dataformats {dataformats!r}")
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"image of dtype {array.dtype}; expected numbers")
    array = array.transpose([fmt.index(c) for c in target])
    if "C" not in target:
        array = array[..., None]
    if array.shape[-1] not in (1, 3, 4):
        raise ValueError(f"image has {array.shape[-1]} channels; expected 1, 3 or 4")
    if array.dtype != np.uint8:
        scaled = np.nan_to_num(array.astype(np.float32) * 255.0)
        array = scaled.clip(0, 255).astype(np.uint8)
    return array, "NHWC" if array.ndim == 4 else "HWC"


def figure_pixels(figure: Any, close: bool) -> np.ndarray:
    """HWC uint8 RGBA pixels of a matplotlib figure (rendered with its Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    pixels = np.array(canvas.buffer_rgba(), copy=True)
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return pixels
