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
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import re
import socket
import stat
import struct
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from . import packed
from .pickle_guard import memo_problem

log = logging.getLogger(__name__)

# 2: the ``extras`` stream (text, histograms, hparams, ... see kinds.py). Version 1
# stores have no such segment and read unchanged.
# 3: scalar columns packed as little-endian bytes (packed.py); list columns still read.
FORMAT_VERSION = 3

META_FILE = "meta.pickle"
STATUS_FILE = "status.pickle"
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

STATES = ("running", "finished", "stopped", "failed")  # stopped: Ctrl-C or SIGTERM


class StoreError(Exception):
    """A store file that can not be read; the message names the file."""


class UnsafePickleError(StoreError):
    """A payload asked for a global (class or function): refused, nothing ran."""


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


# Temporary files of atomic writes: ``.<target>.<pid>@<host>.<8 random chars>.tmp``.
# The writer's pid and host tell a leftover of a killed write from one in progress.
_TMP_SUFFIX = ".tmp"
_TMP_RE = re.compile(r"^\.(.+)\.(\d+)@([A-Za-z0-9_-]*)\.[a-z0-9_]{8}\.tmp$")
_OLD_TMP_RE = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")  # before pid and host were named
# A temporary file of another host is taken as abandoned after this long unchanged.
_FOREIGN_TMP_SECONDS = 3600.0


def _host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:32]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _abandoned_tmp(name: str, st: os.stat_result) -> bool:
    """Whether ``name`` is the temporary file of an atomic write that will never finish."""
    match = _TMP_RE.match(name)
    if match is None:
        return _OLD_TMP_RE.match(name) is not None
    pid, host = int(match.group(2)), match.group(3)
    if host != _host_tag():
        return time.time() - st.st_mtime > _FOREIGN_TMP_SECONDS
    # Our own pid: a restarted container often gets its old pid back, and this
    # process is only opening the run, so the file is an earlier process's.
    return pid == os.getpid() or not _pid_alive(pid)


def remove_leftover_tmp_files(store_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files of killed atomic writes from a store and its run dir.

    Called when a writer opens a run: those files (``.meta.pickle.*.tmp``,
    ``.latest.pth.*.tmp`` of checkpoints) would otherwise stay forever. A file
    whose writer still runs on this host is kept. Returns the paths removed.
    """
    store = Path(store_dir)
    dirs = [store, store.parent] if store.name == "pickle" else [store]
    removed = []
    for directory in dirs:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if not (entry.name.startswith(".") and entry.name.endswith(_TMP_SUFFIX)):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and _abandoned_tmp(entry.name, st):
                    Path(entry.path).unlink()
                    removed.append(Path(entry.path))
            except OSError as err:
                log.warning("could not remove leftover temporary file %s: %s", entry.path, err)
    for path in removed:
        log.info("removed %s, left by an interrupted write", path)
    return removed


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Write a file that appears whole or not at all: temp file in the same dir, fsync, rename.

    A write killed midway leaves its temporary file, which
    :func:`remove_leftover_tmp_files` removes at the next start.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}@{_host_tag()}.", suffix=_TMP_SUFFIX, dir=path.parent
    )
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide it from a viewer running as another user
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_file(path) as f:
        f.write(data)


def ensure_writable_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` (with parents) and prove a file can be created in it; OSError if not.

    Creating a file is the only reliable test: permissions, read-only mounts and
    ACLs all show here, where ``os.access`` would miss some.
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".write-test-{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()


def encode_document(doc: dict[str, Any]) -> bytes:
    """Bytes of a whole-file document (meta or status): one frame."""
    return encode_frame(dumps(doc))


def decode_document(data: bytes, source: str | os.PathLike[str]) -> dict[str, Any]:
    """Decode a whole-file document written by :func:`encode_document`."""
    try:
        frames = list(iter_frames(data))
    except CorruptFrameError as err:
        raise StoreError(f"{source}: {err}") from None
    if len(frames) != 1 or frames[0].end != len(data):
        raise StoreError(f"{source}: expected exactly one complete frame")
    doc = loads(frames[0].payload, source)
    if not isinstance(doc, dict):
        raise StoreError(f"{source}: expected a dict, found {type(doc).__name__}")
    return doc


# --- scalar and image batches ----------------------------------------------------
#
# A scalar batch is columnar per series, so a reader extends arrays instead of
# walking one small object per point:
#   {"v": 3, "series": [(group, name, steps, epochs, wall_times, values), ...]}
# each column little-endian bytes (int64 steps, float64 the rest; packed.py);
# formats 1 and 2 wrote lists of numbers, which read as they are.
# An image batch:
#   {"v": 1, "images": [(group, name, step, epoch, wall_time, png_bytes), ...]}

# Lists as the writer holds them (and as formats 1-2 stored them); typed arrays as
# a reader returns format 3's packed columns.
SeriesColumns = tuple[str, str, Sequence[int], Sequence[float], Sequence[float], Sequence[float]]
ImageRecord = tuple[str, str, int, float, float, bytes]


def _halves(items: list) -> list[list]:
    half = len(items) // 2
    return [items[:half], items[half:]]


def _split_series(series: list[SeriesColumns]) -> list[list[SeriesColumns]] | None:
    """Two smaller batches holding the same points, None when there is only one point."""
    if len(series) > 1:
        return _halves(series)
    group, name, steps, epochs, times, values = series[0]
    if len(steps) < 2:
        return None
    half = len(steps) // 2
    return [
        [(group, name, steps[:half], epochs[:half], times[:half], values[:half])],
        [(group, name, steps[half:], epochs[half:], times[half:], values[half:])],
    ]


def _encode_batch(key: str, items: list, split: Any, pack: Any = list) -> bytes:
    """Frames of one batch, split until each payload fits in :data:`MAX_FRAME_BYTES`.

    A batch grows large when the disk stalls while training logs fast; the
    reader refuses longer frames, so the writer must never make one. ``pack``
    turns the items into what is stored; ``split`` halves the items themselves.
    """
    payload = dumps({"v": FORMAT_VERSION, key: pack(items)})
    if len(payload) <= MAX_FRAME_BYTES:
        return encode_frame(payload)
    parts = split(items)
    if parts is None:
        log.error(
            "dropped one %s record of %d bytes: above the %d-byte frame limit",
            key,
            len(payload),
            MAX_FRAME_BYTES,
        )
        return b""
    return b"".join(_encode_batch(key, part, split, pack) for part in parts)


def encode_scalar_batch(series: list[SeriesColumns]) -> bytes:
    """Frame bytes for one batch of scalar series (several frames when it is huge)."""
    return _encode_batch("series", series, _split_series, _packed_series)


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
    return _encode_batch("images", images, lambda items: _halves(items) if len(items) > 1 else None)


# Steps are stored and exported as int64; the visualizer and CSV consumers
# must never meet a wider one.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Exact types: the SafeUnpickler can build no subclass, and bool (a subclass of
# int) is a type error in a step or value, not the number 0 or 1.
_INT_TYPES = frozenset({int})
_NUMBER_TYPES = frozenset({int, float})


def _column_problem(label: str, col: object, allowed: frozenset[type]) -> str | None:
    """Why ``col`` is not a list of ``allowed`` numbers within int64 where int, else None."""
    if not isinstance(col, list):
        return f"{label} is {type(col).__name__}, not a list"
    # set(map(type, ...)) runs in C: a million points cost milliseconds.
    types = set(map(type, col))
    if not types <= allowed:
        bad = sorted(t.__name__ for t in types - allowed)
        return f"{label} holds {', '.join(bad)}"
    if int in types:
        ints = col if float not in types else [v for v in col if type(v) is int]
        if min(ints) < _INT64_MIN or max(ints) > _INT64_MAX:
            return f"{label} holds an integer outside int64"
    return None


def series_problem(item: object) -> str | None:
    """Why one scalar series entry breaks the schema, or None when it is valid."""
    if not isinstance(item, tuple) or len(item) != 6:
        return "series entry is not a 6-tuple"
    group, name, steps, epochs, times, values = item
    if not isinstance(group, str) or not isinstance(name, str):
        return "group and name must be str"
    if not isinstance(steps, list):  # format 3's packed bytes, or the arrays they read as
        problem = packed.packed_problem(item[2:])
        return f"{group}/{name}: {problem}" if problem else None
    for label, col, allowed in (
        ("steps", steps, _INT_TYPES),
        ("epochs", epochs, _NUMBER_TYPES),
        ("wall times", times, _NUMBER_TYPES),
        ("values", values, _NUMBER_TYPES),
    ):
        if problem := _column_problem(label, col, allowed):
            return f"{group}/{name}: {problem}"
    if not len(steps) == len(epochs) == len(times) == len(values):
        return f"{group}/{name}: columns differ in length"
    return None


def _is_number(value: object) -> bool:
    """A float, or an int within int64 (bool excluded)."""
    return type(value) is float or (type(value) is int and _INT64_MIN <= value <= _INT64_MAX)


def image_problem(item: object) -> str | None:
    """Why one image record breaks the schema, or None when it is valid."""
    if not isinstance(item, tuple) or len(item) != 6:
        return "image record is not a 6-tuple"
    group, name, step, epoch, wall_time, png = item
    if not isinstance(group, str) or not isinstance(name, str):
        return "group and name must be str"
    if type(step) is not int or not _INT64_MIN <= step <= _INT64_MAX:
        return f"{group}/{name}: step {step!r:.40} is not an int64"
    if not (_is_number(epoch) and _is_number(wall_time)):
        return f"{group}/{name}: epoch and wall time must be numbers"
    if type(png) is not bytes:
        return f"{group}/{name}: PNG is {type(png).__name__}, not bytes"
    return None


# A pickle may refer to one object many times (its memo), so a small frame can
# stand for a huge document, and validating that would take hours. Every value
# the store writes costs at least a byte, so eight values a byte is generous.
_EXPANSION = 8


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
    doc = loads(payload, source)
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return [], [f"{what} frame without a {key!r} list"]
    budget = _EXPANSION * len(payload) + 4096
    if _size_over(items, budget):
        return [], [f"{what} frame of {len(payload)} bytes shares one object many times over"]
    good: list = []
    problems: list[str] = []
    for item in items:
        problem = problem_of(item)
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
        raise StoreError(f"{source}: malformed scalar frame: {problems[0]}")
    return good


def decode_image_batch(payload: bytes, source: str) -> list[ImageRecord]:
    """Validated image records of one image frame; any invalid record raises StoreError."""
    good, problems = image_records(payload, source)
    if problems:
        raise StoreError(f"{source}: malformed image frame: {problems[0]}")
    return good
