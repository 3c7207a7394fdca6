"""Writer-thread encoders of the extra record kinds: numpy arrays in, plain data out.

Each function follows what ``torch.utils.tensorboard`` computes on the calling
thread (its histogram bucketing, PR-curve binning, 16-bit WAV), so a chart
drawn from our store matches TensorBoard's; here it runs on the recorder's
writer thread instead. A value that can not be encoded raises ValueError,
which the recorder reports naming the tag. No torch: tensors arrive converted
by :func:`~.images.to_numpy`, which duck-types them.
"""

from __future__ import annotations

import io
import logging
import math
import wave
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from run_core.tags import key_of
from snapshot_store.format.batches import ImageRecord
from snapshot_store.format.images import encode_png, make_grid, to_hwc_uint8, to_numpy, video_grid
from snapshot_store.format.kinds import ExtraRecord
from snapshot_store.format.schema import record_problem

log = logging.getLogger(__name__)

# Turns what the caller handed over into a kind's data dict (PNG bytes for "image");
# ValueError or TypeError skips that record with a warning.
Encoder = Callable[[Any], Any]
# (kind, tag, step, wall_time, raw value, encoder or None), as Recorder.log_record queues it.
PendingExtra = tuple[str, str, int, float, Any, "Encoder | None"]


def encode_pending(
    pending: list[PendingExtra], epoch: float
) -> tuple[list[ExtraRecord], list[ImageRecord]]:
    """Writer thread: the valid extra records of ``pending``, and its images (keyed as
    :func:`~run_core.tags.key_of` says, so an image's tag is kept).

    A value that fails to encode or breaks its kind's schema costs only itself:
    one warning naming its kind, tag and step.
    """
    records: list[ExtraRecord] = []
    images: list[ImageRecord] = []
    for kind, tag, step, wall_time, value, encode in pending:
        try:
            data = encode(value) if encode is not None else value
        except (ValueError, TypeError, OSError) as err:
            log.warning("skipped %s %r at step %d: %s", kind, tag, step, err)
            continue
        if kind == "image":
            images.append((*key_of(tag), step, epoch, float(wall_time), data))
            continue
        record = (kind, tag, step, float(wall_time), data)
        if problem := record_problem(record):
            log.warning("skipped %s %r at step %d: %s", kind, tag, step, problem)
        else:
            records.append(record)
    return records, images


def _default_bins() -> list[float]:
    """TensorBoard's default ("tensorflow") bucket limits: ±1e-12 growing by 10% to 1e20."""
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0.0] + buckets


DEFAULT_BINS = np.array(_default_bins())


def _finite_floats(value: Any, what: str) -> np.ndarray:
    array = to_numpy(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"{what} must be numbers, not {array.dtype}")
    array = array.astype(np.float64).reshape(-1)
    if array.size == 0:
        raise ValueError(f"{what} is empty")
    if not np.isfinite(array).all():
        raise ValueError(
            f"{what} holds NaN or infinity ({int((~np.isfinite(array)).sum())} values)"
        )
    return array


def encode_histogram(raw: tuple[Any, Any, int | None]) -> dict[str, Any]:
    """TensorBoard's ``make_histogram`` of ``(values, bins, max_bins)``; bins "tensorflow" default."""
    values, bins, max_bins = raw
    values = _finite_floats(values, "histogram values")
    counts, limits = np.histogram(values, bins=DEFAULT_BINS if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:
        sub = len(counts) // max_bins
        if len(counts) % sub:
            counts = np.pad(counts, (0, sub - len(counts) % sub))
        counts = counts.reshape(-1, sub).sum(axis=-1)
        limits = np.append(limits[:-1:sub], limits[-1])
    # Keep only the support, with one empty bucket on the left (TensorBoard stores right limits).
    cum = np.cumsum(counts > 0)
    start, end = (int(i) for i in np.searchsorted(cum, [0, cum[-1] - 1], side="right"))
    end += 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    return {
        "min": float(values.min()),
        "max": float(values.max()),
        "num": int(values.size),
        "sum": float(values.sum()),
        "sum_squares": float(values.dot(values)),
        "limits": [float(x) for x in limits[start : end + 1]],
        "counts": [float(x) for x in counts],
    }


def encode_pr_curve(raw: tuple[Any, Any, int, Any]) -> dict[str, Any]:
    """TensorBoard's ``compute_curve`` of ``(labels, predictions, num_thresholds, weights)``."""
    labels, predictions, num_thresholds, weights = raw
    num_thresholds = min(int(num_thresholds), 127)  # TensorBoard's cap
    predictions = _finite_floats(predictions, "predictions")
    labels = _finite_floats(labels, "labels")
    if labels.shape != predictions.shape:
        raise ValueError(f"{labels.size} labels for {predictions.size} predictions")
    w = 1.0 if weights is None else _finite_floats(weights, "weights")
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int32)
    span = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=labels * w)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - labels) * w)
    tp, fp = np.cumsum(tp_b[::-1])[::-1], np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    return {
        "tp": tp.tolist(),
        "fp": fp.tolist(),
        "tn": tn.tolist(),
        "fn": fn.tolist(),
        "precision": (tp / np.maximum(1e-7, tp + fp)).tolist(),
        "recall": (tp / np.maximum(1e-7, tp + fn)).tolist(),
        "num_thresholds": num_thresholds,
    }


def encode_wav(raw: tuple[Any, float]) -> dict[str, Any]:
    """Mono 16-bit WAV of samples in [-1, 1] (clipped, as TensorBoard)."""
    samples, sample_rate = raw
    array = _finite_floats(samples, "audio samples").clip(-1, 1)
    pcm = (array * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(int(sample_rate))
        out.writeframes(pcm.tobytes())
    return {"wav": buf.getvalue(), "sample_rate": float(sample_rate)}


def encode_gif(raw: tuple[Any, float]) -> dict[str, Any]:
    """Animated GIF of a video batch (N, T, C, H, W): each frame tiles the N videos."""
    video, fps = raw
    array = to_numpy(video)
    if array.ndim != 5:
        raise ValueError(f"video of shape {array.shape}; expected (N, T, C, H, W)")
    shape = video_grid(array.shape[0])
    frames = [Image.fromarray(make_grid(array[:, t], "NCHW", shape)) for t in range(array.shape[1])]
    frames = [f.convert("RGB") if f.mode not in ("RGB", "L") else f for f in frames]
    buf = io.BytesIO()
    duration = max(1, round(1000 / float(fps)))
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=duration, loop=0)
    return {"gif": buf.getvalue(), "fps": float(fps)}


def encode_boxes(raw: tuple[Any, Any, str, float, list[str] | None]) -> bytes:
    """PNG of an image with its (x1, y1, x2, y2) boxes drawn, labels at their corners."""
    image, box_array, dataformats, rescale, labels = raw
    pixels = to_hwc_uint8(to_numpy(image), dataformats)
    coords = to_numpy(box_array).astype(np.float64).reshape(-1, 4) * float(rescale)
    if labels is not None and len(labels) != len(coords):
        raise ValueError(f"{len(labels)} labels for {len(coords)} boxes")
    img = Image.fromarray(pixels if pixels.shape[2] != 1 else pixels[:, :, 0]).convert("RGB")
    if rescale != 1:
        img = img.resize((round(img.width * rescale), round(img.height * rescale)))
    draw = ImageDraw.Draw(img)
    for i, (x1, y1, x2, y2) in enumerate(coords):
        draw.rectangle((x1, y1, x2, y2), outline=(255, 0, 0))
        if labels is not None:
            draw.text((x1 + 2, y1 + 1), str(labels[i]), fill=(255, 0, 0))
    return encode_png(np.asarray(img))


# An embedding's features and sprite together stay well below a frame (64 MiB), so the
# record is never dropped at write; a bigger one is refused with one warning.
MAX_EMBEDDING_BYTES = 32 * 1024 * 1024


def _projection(array: np.ndarray) -> np.ndarray:
    """The (N, 2) first two principal components of ``array`` (a flat second for 1-D data)."""
    centred = array - array.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T
    if xy.shape[1] < 2:
        xy = np.hstack([xy, np.zeros((len(xy), 2 - xy.shape[1]))])
    return xy


def _sprite(label_img: Any) -> tuple[bytes, list[int]]:
    """TensorBoard's ``sprite.png`` of (N, C, H, W) label images in [0, 1], and [W, H]:
    the images in rows of ceil(sqrt(N)) on a square black canvas, as ``make_sprite`` draws."""
    images = to_numpy(label_img)
    if images.ndim != 4 or images.shape[1] not in (1, 3):
        raise ValueError(f"label_img of shape {images.shape}; expected (N, 1 or 3, H, W)")
    n, _, h, w = images.shape
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    ncols = min(n, math.ceil(n**0.5))
    nrows = math.ceil(n / ncols)
    side = max(w * ncols, h * nrows)  # TensorBoard's square of the grid's width
    canvas = np.zeros((side, side, 3))
    for i, image in enumerate(images):
        row, col = divmod(i, ncols)
        canvas[row * h : (row + 1) * h, col * w : (col + 1) * w] = image.transpose(1, 2, 0)
    return encode_png((canvas * 255).clip(0, 255).astype(np.uint8)), [w, h]


def encode_embedding(raw: tuple[Any, list[str] | None, list[str], Any]) -> dict[str, Any]:
    """An (N, D) embedding as TensorBoard's projector files hold it, and its 2-D view.

    ``raw``: the matrix, the N labels (or None), the lines of ``metadata.tsv`` and the
    label images (or None). The features keep their dtype (``tensors.tsv`` prints them as
    TensorBoard does); ``x``, ``y`` are the first two principal components.
    """
    mat, labels, metadata, label_img = raw
    array = to_numpy(mat)
    if array.ndim != 2:
        raise ValueError(f"embedding of shape {array.shape}; expected (N, D)")
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"embedding must be numbers, not {array.dtype}")
    if labels is not None and len(labels) != len(array):
        raise ValueError(f"{len(labels)} metadata labels for {len(array)} rows")
    if label_img is not None and len(to_numpy(label_img)) != len(array):
        raise ValueError(f"{len(to_numpy(label_img))} label images for {len(array)} rows")
    sprite, dim = _sprite(label_img) if label_img is not None else (b"", [])
    if array.nbytes + len(sprite) > MAX_EMBEDDING_BYTES:
        raise ValueError(
            f"embedding of {array.shape[0]}x{array.shape[1]} {array.dtype} with its sprite is "
            f"{(array.nbytes + len(sprite)) / 2**20:.0f} MiB, above the "
            f"{MAX_EMBEDDING_BYTES // 2**20} MiB kept: log a sample of its rows"
        )
    xy = _projection(_finite_floats(array, "embedding").reshape(array.shape))
    plain = array.astype(array.dtype.newbyteorder("<"))  # stored little-endian on every host
    return {
        "x": xy[:, 0].tolist(),
        "y": xy[:, 1].tolist(),
        "labels": list(labels or []),
        "shape": [int(n) for n in array.shape],
        "dtype": plain.dtype.str,
        "values": np.ascontiguousarray(plain).tobytes(),
        "metadata": metadata,
        "sprite": sprite,
        "sprite_dim": dim,
    }


def encode_tensor(value: Any) -> dict[str, Any]:
    """Shape, dtype and flat values of a numeric tensor."""
    array = to_numpy(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"tensor must be numbers, not {array.dtype}")
    flat = array.astype(np.float64).reshape(-1)  # NaN kept: a tensor is stored as it is
    return {"shape": list(array.shape), "dtype": str(array.dtype), "values": flat.tolist()}


def encode_mesh(raw: tuple[Any, Any, Any]) -> dict[str, Any]:
    """Flat vertices (x, y, z ...), faces (3 vertex indexes each) and RGB colors of mesh 0.

    TensorBoard takes (B, N, 3) batches; the first mesh of the batch is kept.
    """
    vertices, faces, colors = raw
    verts = _finite_floats(vertices, "vertices").reshape(-1)
    shape = to_numpy(vertices).shape
    if len(shape) != 3 or shape[2] != 3:
        raise ValueError(f"vertices of shape {shape}; expected (B, N, 3)")
    n = shape[1]
    out: dict[str, Any] = {"vertices": verts[: n * 3].tolist(), "faces": [], "colors": []}
    if faces is not None:
        face_array = to_numpy(faces).astype(np.int64)
        if face_array.ndim != 3 or face_array.shape[2] != 3 or face_array.max(initial=0) >= n:
            raise ValueError(f"faces of shape {face_array.shape} do not index the {n} vertices")
        out["faces"] = face_array[0].reshape(-1).tolist()
    if colors is not None:
        color_array = to_numpy(colors).astype(np.int64).clip(0, 255)
        if color_array.ndim != 3 or color_array.shape[1:] != (n, 3):
            raise ValueError(f"colors of shape {color_array.shape}; expected (B, {n}, 3)")
        out["colors"] = color_array[0].reshape(-1).tolist()
    return out
