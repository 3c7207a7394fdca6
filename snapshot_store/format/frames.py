"""The snapshot store's on-disk format: the one contract between trainer and visualizer.

This module is imported by both sides and must never import torch: the visualizer
runs on laptops that do not have it.

Layout of a store directory (``<checkpoints_dir>/<name>/pickle/``)::

    meta.pickle                 run metadata, one frame, replaced atomically
    status.pickle               state + heartbeat, one frame, replaced atomically
    scalars-00000000.pickle     append-only log of scalar batches, one frame per batch
    images-00000000.pickle      append-only log of PNG image snapshots
    extras-00000000.pickle      text, histograms, hparams and the other kinds of kinds.py

Segments roll by size and age; a segment with a higher number exists only once
the lower one is closed, so closed segments never change again.

Every file is a sequence of frames (the TFRecord idea)::

    uint64 length | uint32 crc32(length bytes) | payload | uint32 crc32(payload)

and every payload is a pickle of plain builtins only. Readers unpickle with
:class:`SafeUnpickler`, which refuses every global, so a hostile file can not run
code: it can only fail to load.

This module is the format only: bytes, framing, file names and the safe pickle
(as TensorBoard's ``record_writer.py`` keeps its framing in one place). What a
payload may hold is :mod:`.schema`'s; the batches in a segment's frames are
:mod:`.batches`' (scalars, images) and :mod:`.kinds`' (extras); how a document
is replaced atomically is :mod:`.atomic`'s.
"""

from __future__ import annotations

import io
import os
import pickle
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from snapshot_store.format.pickle_guard import memo_problem, value_problem

# 2: the ``extras`` stream (text, histograms, hparams, ... see kinds.py). Version 1
# stores have no such segment and read unchanged.
# 3: scalar columns packed as little-endian bytes (packed.py); list columns still read.
FORMAT_VERSION = 3

META_FILE = "meta.pickle"
STATUS_FILE = "status.pickle"
# Meta's fields that status repeats, so a listing of many runs reads one document a run
# (meta stays their owner; a status without them is an older store's: read meta then).
RUN_FIELDS = ("name", "options")
SCALARS = "scalars"
IMAGES = "images"
EXTRAS = "extras"  # the record kinds of kinds.py
STREAMS = (SCALARS, IMAGES, EXTRAS)
SEGMENT_RE = re.compile(r"^(scalars|images|extras)-(\d{8})\.pickle$")

# Pickle protocol 4 is readable by every Python the visualizer supports.
PICKLE_PROTOCOL = 4
# The largest payload a frame may hold. Writers split batches to stay below it;
# readers refuse a longer frame without allocating it, so a hostile length
# field can not make them allocate gigabytes.
MAX_FRAME_BYTES = 64 * 1024 * 1024

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
FRAME_OVERHEAD = _HEADER.size + _FOOTER.size

STATES = ("running", "finished", "stopped", "failed")  # how a run gets each: endings.py
ENDED_STATES = STATES[1:]  # how a run ends: it writes no more


class StoreError(Exception):
    """A store file that can not be read; the message names the file."""


class UnsafePickleError(StoreError):
    """A payload asked for a global (class or function): refused, nothing ran."""


class OverBudgetError(StoreError):
    """A document that unpickles to more than a reader can take (pickle_guard's budget)."""


class CorruptFrameError(StoreError):
    """A complete frame whose checksum or length field is wrong."""


class OversizeFrameError(CorruptFrameError):
    """A frame whose (checksummed) length is above :data:`MAX_FRAME_BYTES`: refused unread.

    Its header is intact, so a reader may skip to :attr:`end` and go on.
    """

    def __init__(self, pos: int, length: int) -> None:
        super().__init__(
            f"frame at byte {pos} declares {length:,} bytes, above the "
            f"{MAX_FRAME_BYTES:,}-byte limit; not read"
        )
        self.end = pos + FRAME_OVERHEAD + length


def segment_name(stream: str, index: int) -> str:
    """File name of segment ``index`` of ``stream`` (``scalars`` or ``images``)."""
    if stream not in STREAMS:
        raise ValueError(f"unknown stream {stream!r}; expected one of {STREAMS}")
    return f"{stream}-{index:08d}.pickle"


def parse_segment_name(name: str) -> tuple[str, int] | None:
    """``(stream, index)`` for a segment file name, ``None`` for any other file."""
    match = SEGMENT_RE.match(name)
    return (match.group(1), int(match.group(2))) if match else None


# --- framing -------------------------------------------------------------------


def encode_frame(payload: bytes) -> bytes:
    """Wrap ``payload`` in a frame carrying its length and checksums."""
    length = _HEADER.pack(len(payload), zlib.crc32(struct.pack("<Q", len(payload))))
    return length + payload + _FOOTER.pack(zlib.crc32(payload))


@dataclass(frozen=True)
class Frame:
    """One decoded frame: its payload and where it ends in the buffer."""

    payload: bytes
    end: int


def frame_size(buf: bytes | memoryview, pos: int = 0) -> int | None:
    """Total bytes of the frame starting at ``pos``; None while its header is incomplete.

    Raises :class:`CorruptFrameError` for a header that fails its checksum and
    :class:`OversizeFrameError` for a length above :data:`MAX_FRAME_BYTES`.
    """
    if len(buf) - pos < _HEADER.size:
        return None
    length, length_crc = _HEADER.unpack_from(buf, pos)
    if zlib.crc32(memoryview(buf)[pos : pos + 8]) != length_crc:
        # A header is written in one piece with its frame, so a header whose
        # checksum fails with more bytes behind it is torn only if it is the
        # tail; callers decide by whether the file is still being written.
        raise CorruptFrameError(f"bad frame header at byte {pos}")
    if length > MAX_FRAME_BYTES:
        raise OversizeFrameError(pos, length)
    return FRAME_OVERHEAD + length


def iter_frames(buf: bytes | memoryview, start: int = 0) -> Iterator[Frame]:
    """Yield the complete, valid frames of ``buf`` from ``start``.

    Stops silently at a torn tail (a frame not yet fully written): the caller
    keeps the offset of the last frame yielded and retries later. Raises
    :class:`CorruptFrameError` for a complete frame that fails its checksum,
    and for a header as :func:`frame_size` says.
    """
    view = memoryview(buf)
    pos, size = start, len(view)
    while (total := frame_size(view, pos)) is not None:
        end = pos + total
        if end > size:
            return
        payload = view[pos + _HEADER.size : end - _FOOTER.size]
        (crc,) = _FOOTER.unpack_from(view, end - _FOOTER.size)
        if zlib.crc32(payload) != crc:
            raise CorruptFrameError(f"checksum mismatch in frame at byte {pos}")
        yield Frame(bytes(payload), end)
        pos = end


# --- payloads ------------------------------------------------------------------


class SafeUnpickler(pickle.Unpickler):
    """Unpickler that admits plain builtins only.

    dict, list, tuple, str, bytes, int, float, bool and None are built by pickle
    opcodes without looking up any global; everything else (classes, functions,
    ``os.system`` in a hostile file) needs ``find_class`` and is refused here.
    """

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(f"refused global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused persistent id")


def dumps(obj: Any) -> bytes:
    """Pickle ``obj`` (plain builtins only) for a frame payload."""
    return pickle.dumps(obj, protocol=PICKLE_PROTOCOL)


def loads(payload: bytes, source: str | os.PathLike[str] = "<payload>") -> Any:
    """Unpickle a payload with :class:`SafeUnpickler`; errors name ``source``."""
    if problem := memo_problem(payload):
        raise UnsafePickleError(f"{source}: {problem}; not loaded (it asks for a huge memo)")
    try:
        return SafeUnpickler(io.BytesIO(payload)).load()
    except UnsafePickleError as err:
        raise UnsafePickleError(f"{source}: {err}; not loaded, nothing was executed") from None
    except Exception as err:  # any malformed pickle: report it, never crash the reader
        raise StoreError(f"{source}: unreadable payload ({type(err).__name__}: {err})") from None


# --- whole files (meta, status) --------------------------------------------------


def encode_document(doc: dict[str, Any]) -> bytes:
    """Bytes of a whole-file document (meta or status): one frame."""
    return encode_frame(dumps(doc))


def decode_document(data: bytes, source: str | os.PathLike[str]) -> dict[str, Any]:
    """Decode a whole-file document written by :func:`encode_document`.

    One over the budget of :func:`.pickle_guard.value_problem` raises
    :class:`OverBudgetError`: no reader ever meets such a value.
    """
    try:
        frames = list(iter_frames(data))
    except CorruptFrameError as err:
        raise StoreError(f"{source}: {err}") from None
    if len(frames) != 1 or frames[0].end != len(data):
        raise StoreError(f"{source}: expected exactly one complete frame")
    doc = loads(frames[0].payload, source)
    if problem := value_problem(doc):
        raise OverBudgetError(f"{source}: {problem}; not read (rewrite or remove it)")
    if not isinstance(doc, dict):
        raise StoreError(f"{source}: expected a dict, found {type(doc).__name__}")
    return doc
