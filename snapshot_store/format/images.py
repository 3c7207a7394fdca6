"""Image snapshots: arrays or tensors in, PNG bytes out (numpy + Pillow, no torch)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image


def to_numpy(image: Any) -> np.ndarray:
    """A private numpy copy of ``image`` (numpy array, torch tensor or nested lists)."""
    if hasattr(image, "detach"):  # a torch tensor: duck-typed so this module needs no torch
        image = image.detach().cpu()
        if str(image.dtype) == "torch.bfloat16":
            image = image.float()
        image = image.numpy()
    return np.array(image, copy=True)


def to_hwc_uint8(image: np.ndarray, dataformats: str = "CHW") -> np.ndarray:
    """Convert an image in ``dataformats`` (CHW, HWC, HW) to HWC uint8.

    Floats are taken as [0, 1], as TensorBoard does; integers as [0, 255].
    """
    fmt = dataformats.upper()
    if fmt not in ("CHW", "HWC", "HW"):
        raise ValueError(f"dataformats must be CHW, HWC or HW, not {dataformats!r}")
    if image.ndim != len(fmt):
        raise ValueError(f"image of shape {image.shape} does not match dataformats {dataformats!r}")
    if fmt == "HW":
        image = image[:, :, None]
    elif fmt == "CHW":
        image = image.transpose(1, 2, 0)
    if image.shape[2] not in (1, 3, 4):
        raise ValueError(f"image has {image.shape[2]} channels; expected 1, 3 or 4")
    if image.dtype == np.uint8:
        return image
    if np.issubdtype(image.dtype, np.floating):
        image = np.nan_to_num(image.astype(np.float32)) * 255.0
    return np.clip(image, 0, 255).round().astype(np.uint8)


# The most pixels a PNG to decode may claim: Pillow's bound, past which it only
# warns up to twice the bound, where decoding the claim takes gigabytes.
MAX_PNG_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485

# TensorBoard's add_images: 8 images per row, no padding, black where the last row ends.
GRID_COLUMNS = 8


def video_grid(count: int) -> tuple[int, int]:
    """``(rows, columns)`` TensorBoard's ``add_video`` tiles ``count`` videos in.

    The batch is padded with black to a power of two, ``2**((count.bit_length() - 1) // 2)``
    rows of it: 16 videos are 4x4, 8 are 2x4, 3 are 1x4.
    """
    padded = 1 << (count - 1).bit_length()
    rows = 2 ** ((count.bit_length() - 1) // 2)
    return rows, padded // rows


def make_grid(
    images: np.ndarray, dataformats: str = "NCHW", shape: tuple[int, int] | None = None
) -> np.ndarray:
    """Tile a batch (NCHW, NHWC or NHW) into one HWC uint8 image, as TensorBoard does.

    ``shape`` is ``(rows, columns)``; by default ``min(N, 8)`` columns and as many
    rows as needed (16 images of 100x100 make 800x200).
    """
    fmt = dataformats.upper()
    if fmt not in ("NCHW", "NHWC", "NHW"):
        raise ValueError(f"dataformats must be NCHW, NHWC or NHW, not {dataformats!r}")
    if images.ndim != len(fmt) or images.shape[0] == 0:
        raise ValueError(
            f"batch of shape {images.shape} does not match dataformats {dataformats!r}"
        )
    tiles = [to_hwc_uint8(img, fmt[1:]) for img in images]
    channels = max(t.shape[2] for t in tiles)
    tiles = [np.repeat(t, channels, axis=2) if t.shape[2] == 1 else t for t in tiles]
    n = len(tiles)
    cols = min(n, GRID_COLUMNS)
    rows, cols = shape if shape is not None else (-(-n // cols), cols)
    h, w = tiles[0].shape[:2]
    grid = np.zeros((rows * h, cols * w, channels), np.uint8)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, cols)
        grid[r * h : (r + 1) * h, c * w : (c + 1) * w] = tile
    return grid


def to_pixels(image: Any, dataformats: str) -> Any:
    """What a recorder queues of a logged image: PNG bytes as they are, else HWC uint8
    pixels (a batch, N first in ``dataformats``, tiled by :func:`make_grid`)."""
    if isinstance(image, bytes):
        return image
    array = to_numpy(image)
    if dataformats.upper().startswith("N"):
        return make_grid(array, dataformats)
    return to_hwc_uint8(array, dataformats)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an HWC uint8 image."""
    if image.shape[2] == 1:
        image = image[:, :, 0]
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def decode_png(data: bytes) -> np.ndarray:
    """HWC uint8 array of PNG bytes; ValueError for other bytes or a size past MAX_PNG_PIXELS."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.format != "PNG":
                raise ValueError(f"not a PNG image ({img.format})")
            width, height = img.size
            if width * height > MAX_PNG_PIXELS:
                raise ValueError(f"a PNG of {width}x{height} pixels, more than {MAX_PNG_PIXELS:,}")
            return np.asarray(img.convert("RGBA" if img.mode in ("RGBA", "LA", "P") else "RGB"))
    except (OSError, SyntaxError, EOFError, Image.DecompressionBombError) as err:
        # Pillow's errors for bytes it can not read (UnidentifiedImageError is an OSError).
        raise ValueError(f"not a readable PNG image: {err}") from err
