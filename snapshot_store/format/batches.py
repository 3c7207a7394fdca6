"""The batches a segment's frames hold: encoded by the writer, validated by the reader.

A scalar batch is columnar per series, so a reader extends arrays instead of
walking one small object per point::

    {"v": 3, "series": [(group, name, steps, epochs, wall_times, values), ...]}

each column little-endian bytes (int64 steps, float64 the rest; :mod:`.packed`);
formats 1 and 2 wrote lists of numbers, which read as they are. An image batch::

    {"v": 1, "images": [(group, name, step, epoch, wall_time, png_bytes), ...]}

a captioned image's record has its captions (a list of str, one an image of a tiled
list) as a seventh item; a store written before captions has none, and reads as it is.

The extras stream's batches (:mod:`.kinds`) are framed and read by the same
:func:`encode_batch` and :func:`records_of`; what each record may hold is
:mod:`.schema`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from snapshot_store.format import frames as fmt
from snapshot_store.format import packed
from snapshot_store.format.pickle_guard import value_problem
from snapshot_store.format.schema import image_problem, series_problem

log = logging.getLogger(__name__)

# Lists as the writer holds them (and as formats 1-2 stored them); typed arrays as
# a reader returns format 3's packed columns.
SeriesColumns = tuple[str, str, Sequence[int], Sequence[float], Sequence[float], Sequence[float]]
ImageRecord = (
    tuple[str, str, int, float, float, bytes] | tuple[str, str, int, float, float, bytes, list[str]]
)
# Two smaller lists of the items given, or None when they can not be split further.
Split = Callable[[list], list[list] | None]

# A pickle may refer to one object many times (its memo), so a small frame can
# stand for a huge document, and validating that would take hours. Every value
# the store writes costs at least a byte, so eight values a byte is generous.
_EXPANSION = 8


# --- writing -------------------------------------------------------------------------


def split_records(items: list) -> list[list] | None:
    """Halves of a list of whole records, None for a single record (it can not shrink)."""
    if len(items) < 2:
        return None
    half = len(items) // 2
    return [items[:half], items[half:]]


def _split_series(series: list[SeriesColumns]) -> list[list[SeriesColumns]] | None:
    """Two smaller batches holding the same points, None when there is only one point."""
    if len(series) > 1:
        return split_records(series)
    group, name, steps, epochs, times, values = series[0]
    if len(steps) < 2:
        return None
    half = len(steps) // 2
    return [
        [(group, name, steps[:half], epochs[:half], times[:half], values[:half])],
        [(group, name, steps[half:], epochs[half:], times[half:], values[half:])],
    ]


def encode_batch(key: str, items: list, split: Split, pack: Any = list) -> bytes:
    """Frames of one batch, split until each payload fits in :data:`~.frames.MAX_FRAME_BYTES`.

    A batch grows large when the disk stalls while training logs fast; the
    reader refuses longer frames, so the writer must never make one. ``pack``
    turns the items into what is stored; ``split`` halves the items themselves.
    """
    payload = fmt.dumps({"v": fmt.FORMAT_VERSION, key: pack(items)})
    if len(payload) <= fmt.MAX_FRAME_BYTES:
        return fmt.encode_frame(payload)
    parts = split(items)
    if parts is None:
        log.error(
            "dropped one %s record of %d bytes: above the %d-byte frame limit",
            key,
            len(payload),
            fmt.MAX_FRAME_BYTES,
        )
        return b""
    return b"".join(encode_batch(key, part, split, pack) for part in parts)


def encode_scalar_batch(series: list[SeriesColumns]) -> bytes:
    """Frame bytes for one batch of scalar series (several frames when it is huge)."""
    return encode_batch("series", series, _split_series, _packed_series)


def _packed_series(series: list[SeriesColumns]) -> list[tuple]:
    """Each series with its columns packed; one with a step past int64 stays lists,
    which a reader checks and reports."""
    out: list[tuple] = []
    for group, name, *columns in series:
        columns_packed = packed.pack(columns)
        out.append((group, name, *(columns if columns_packed is None else columns_packed)))
    return out


def encode_image_batch(images: list[ImageRecord]) -> bytes:
    """Frame bytes for one batch of image snapshots (several frames when it is huge)."""
    return encode_batch("images", images, split_records)


# --- reading -------------------------------------------------------------------------


def _size_over(records: list, budget: int) -> bool:
    """Whether the lengths the validators walk through ``records`` add up to over ``budget``.

    The validators go into each record, its tuples, dict values and the two-item
    chart lists of a layout; every other list they scan flat, at a cost of its length.
    """
    pending, total = list(records), len(records)
    while pending:
        item = pending.pop()
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, (tuple, dict, list)):
            total += len(item) + 1
            if isinstance(item, dict):
                pending.extend(item.values())
            elif isinstance(item, tuple) or len(item) <= 2:
                pending.extend(item)
        if total > budget:
            return True
    return False


def records_of(
    payload: bytes, source: str, key: str, what: str, problem_of: Callable[[object], str | None]
) -> tuple[list, list[str]]:
    """The records under ``key`` of one ``what`` frame that ``problem_of`` passes, and why
    each other one was left out.

    Raises StoreError only when the payload does not unpickle; a payload that
    unpickles to the wrong shape is one bad record, not a broken file.
    """
    doc = fmt.loads(payload, source)
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return [], [f"{what} frame without a {key!r} list"]
    budget = _EXPANSION * len(payload) + 4096
    if _size_over(items, budget):
        return [], [f"{what} frame of {len(payload)} bytes shares one object many times over"]
    good: list = []
    problems: list[str] = []
    for item in items:
        # a value no reader can take (pickle_guard's budget), else one not of its kind
        problem = value_problem(item) or problem_of(item)
        if problem is None:
            good.append(item)
        else:
            problems.append(problem)
    return good, problems


def scalar_records(payload: bytes, source: str) -> tuple[list[SeriesColumns], list[str]]:
    """The valid series of one scalar frame, and why each invalid one was left out.

    Packed columns come back as typed arrays (``array('q')`` steps, ``array('d')``
    the rest), list columns of older stores as they were.
    """
    good, problems = records_of(payload, source, "series", "scalar", series_problem)
    return [
        s if type(s[2]) is not bytes else (s[0], s[1], *packed.unpack(s[2:])) for s in good
    ], problems


def image_records(payload: bytes, source: str) -> tuple[list[ImageRecord], list[str]]:
    """The valid records of one image frame, and why each invalid one was left out."""
    return records_of(payload, source, "images", "image", image_problem)


def decode_scalar_batch(payload: bytes, source: str) -> list[SeriesColumns]:
    """Validated series of one scalar frame; any invalid record raises StoreError."""
    good, problems = scalar_records(payload, source)
    if problems:
        raise fmt.StoreError(f"{source}: malformed scalar frame: {problems[0]}")
    return good


def decode_image_batch(payload: bytes, source: str) -> list[ImageRecord]:
    """Validated image records of one image frame; any invalid record raises StoreError."""
    good, problems = image_records(payload, source)
    if problems:
        raise fmt.StoreError(f"{source}: malformed image frame: {problems[0]}")
    return good
