"""The recorder: rank-0 writer of the snapshot store, used by the trainer and by users' loops.

A ``log`` call only appends to a deque; a background thread drains it at least
every ``flush_interval`` seconds, frames the batch and appends it to the active
segment, so the visualizer sees points within a fraction of a second and the
training thread never waits on the disk.

The writer thread follows TensorBoard's ``EventFileWriter``: one thread behind a
queue, a stop flag, and a failure of the thread raised on the caller's next call
(a full disk is the exception: frames wait in memory until space frees up, up to
``max_pending_bytes``; :mod:`.frame_sink` holds them).
The recorder installs no signal or exit handlers: whoever owns the process
(the trainer's run session, a user's script) calls :meth:`Recorder.close`.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from . import frames as fmt
from . import kinds
from .encoders import Encoder, PendingExtra, encode_pending
from .frame_sink import FrameSink, PendingLimitError
from .images import encode_png, make_grid, to_hwc_uint8, to_numpy
from .rank import global_rank
from .scalar_columns import RECORD_ITEMS, ScalarColumns
from .tensor_values import TENSOR_TYPES, held, is_tensor
from .values import redact

log = logging.getLogger(__name__)

# (group, name, step, epoch, wall_time, HWC uint8 pixels or PNG bytes).
PendingImage = tuple[str, str, int, float, float, Any]
OnFile = Callable[[Path, bool], None]

_now = time.time  # bound once: log() is the hot path
# Seconds between status rewrites for new data (the heartbeat rewrites it anyway
# every heartbeat_seconds).
_STATUS_MIN_SECONDS = 1.0
# Memory a queued scalar holds (six list slots, its wall time and value): the
# queue's share of max_pending_bytes is counted in records, not measured.
_RECORD_BYTES = 144


class RecorderError(fmt.StoreError):
    """The recorder's writer thread failed; raised on every call after it, chained from the cause."""


class Recorder:
    """Writes scalars, images and status of one run to a snapshot store.

    Only the process of global rank 0 writes; on every other rank each method
    returns at once and no file is touched.

    Args:
        store_dir: the store, conventionally ``<checkpoints_dir>/<name>/pickle``.
        options: run options, saved in the metadata with secrets redacted.
        world_size, hosts: recorded in the metadata.
        on_file: called on the writer thread as ``on_file(path, closed)`` for every
            file the store writes: meta.pickle once written, each segment when it
            is closed (``closed=True``) and after appends (``closed=False``),
            status.pickle after each write (``closed`` once the run has ended).
            An exception it raises stops the writer like any other failure.
        rank: this process's global rank (default: :func:`~snapshot_store.rank.global_rank`).
        max_pending_bytes: the most memory that logged scalars waiting for the writer
            thread and frames waiting for a full disk may hold together; reaching it
            raises :class:`RecorderError` (the values from then on are not recorded).

    Raises :class:`~snapshot_store.frames.StoreError` when ``store_dir`` can not be
    written, and :class:`~snapshot_store.rank.LaunchError` for inconsistent launcher
    variables.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        options: Mapping[str, Any] | None = None,
        world_size: int | None = None,
        hosts: list[str] | None = None,
        on_file: OnFile | None = None,
        flush_interval: float = 0.1,
        segment_bytes: int = 1 << 20,
        segment_seconds: float = 120.0,
        heartbeat_seconds: float = 5.0,
        rank: int | None = None,
        max_pending_bytes: int = 256 << 20,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.rank = global_rank() if rank is None else rank
        self.enabled = self.rank == 0
        self.closed = False
        self._error: BaseException | None = None
        # The one attribute log() checks: rank 0, not closed, writer healthy.
        self._live = False
        if not self.enabled:
            return
        self.flush_interval = flush_interval
        self.heartbeat_seconds = heartbeat_seconds
        self._on_file = on_file
        self._pid = os.getpid()
        # Logged scalars, RECORD_ITEMS items each: a list's extend() of a tuple and the
        # writer's slice and del are each atomic under the GIL (no lock, no per-value object).
        self._scalars: list[Any] = []
        self._push = self._scalars.extend  # bound once: log() is the hot path
        self.max_pending_bytes = max_pending_bytes
        # Queue items allowed now; the writer lowers it while frames wait for the disk.
        self._max_queued = self._queue_limit(0)
        self._images: collections.deque[PendingImage] = collections.deque()
        self._extras: collections.deque[PendingExtra] = collections.deque()
        self._status_fields: dict[str, Any] = {}
        self._flush_waiters: collections.deque[threading.Event] = collections.deque()
        self._epoch = 0.0
        self._step: int | None = None
        self._last_log_time: float | None = None
        self._columns = ScalarColumns()
        # Names whose logged tensors were changed in place: copied at log() from then on.
        self._copied = self._columns.copied
        fmt.remove_leftover_tmp_files(self.store_dir)  # of a write killed in an earlier session
        self._meta_path, self._started = self._write_meta(options or {}, world_size, hosts)
        self._sink = FrameSink(
            self.store_dir, segment_bytes, segment_seconds, self._announce, max_pending_bytes
        )
        self._status_written_at = 0.0
        self._status_dirty = True
        self._state = "running"
        self._wake = threading.Event()
        self._stop = False
        self._live = True
        self._thread = threading.Thread(target=self._run, name="snapshot-writer", daemon=True)
        self._thread.start()

    # --- public API ------------------------------------------------------------

    def log(
        self,
        values: Mapping[str, Any],
        step: int,
        epoch: float | None = None,
        group: str = "train",
        wall_time: float | None = None,
    ) -> None:
        """Record ``name -> value`` scalars of one ``group`` at global ``step``.

        Values are numbers or one-element tensors. A CPU tensor's value is read
        here (one cheap read, no device involved). Any other tensor (CUDA) is kept
        by reference: nothing is copied, launched or synchronised here, and the
        writer thread copies all pending tensors of a device at once. So the value
        recorded is the tensor's value when the writer copies it (within
        ``flush_interval``): **do not change a logged CUDA tensor in place** (a
        running sum you ``zero_()``, say). If one is changed, its version counter
        tells: that value is dropped with one warning naming ``group/name``, and
        later values of that name are copied at ``log()`` time (one device copy
        each). Pass ``t.detach().clone()`` (or ``t.item()``, which syncs) to log
        the value of a tensor you go on changing.

        ``epoch`` is fractional (2.5 = half way through the third epoch); when
        omitted the last one given is used. A value that is not a number, has
        more than one element or is complex is dropped with one warning per
        name. Raises :class:`RecorderError` once the writer thread has failed
        (a failed device copy included: its message names the values) or the
        values waiting to be written reach ``max_pending_bytes``.
        """
        if not self._live:
            self._raise_if_failed()
            return
        if type(step) is not int:
            step = int(step)
        if epoch is None:
            epoch = self._epoch
        else:
            self._epoch = epoch = float(epoch)
        wall_time = wall_time or _now()
        hold, push = self._held, self._push
        for name, v in values.items():
            push(
                (
                    group,
                    name,
                    step,
                    epoch,
                    wall_time,
                    v if type(v) is float else hold(group, name, v),
                )
            )
        if len(self._scalars) > self._max_queued:
            self._queue_full()

    def log_scalar(
        self, name: str, value: Any, step: int, group: str = "train", wall_time: float | None = None
    ) -> None:
        """:meth:`log` of one value, at the last epoch given: the cheapest call (the
        ``SummaryWriter.add_scalar`` drop-in uses it). Same contract for tensors."""
        if not self._live:
            self._raise_if_failed()
            return
        if type(value) is not float:
            value = self._held(group, name, value)
        if type(step) is not int:
            step = int(step)
        self._push((group, name, step, self._epoch, wall_time or _now(), value))
        if len(self._scalars) > self._max_queued:
            self._queue_full()

    def _held(self, group: str, name: str, value: Any) -> Any:
        """What the queue keeps of a value that is not a float (see :func:`.tensor_values.held`):
        other numbers and bad input as they are, for the writer thread to convert or drop."""
        if type(value) in TENSOR_TYPES or is_tensor(value):
            copied = self._copied
            return held(value, bool(copied) and (group, name) in copied)
        return value

    def _queue_full(self) -> None:
        """The queue reached its share of ``max_pending_bytes``: fail the recorder, loudly."""
        pending = len(self._scalars) // RECORD_ITEMS * _RECORD_BYTES + self._sink.waiting_bytes
        self._fail(PendingLimitError(self.store_dir, pending, self.max_pending_bytes))
        self._raise_if_failed()

    def log_image(
        self,
        name: str,
        image: Any,
        step: int,
        epoch: float | None = None,
        group: str = "images",
        dataformats: str = "CHW",
        wall_time: float | None = None,
    ) -> None:
        """Record an image (CHW/HWC/HW, or a batch as NCHW/NHWC/NHW, tiled) as PNG.

        The pixels are copied now; PNG encoding happens on the writer thread.
        ``image`` may also be PNG bytes already.
        """
        if not self._live:
            self._raise_if_failed()
            return
        if isinstance(image, bytes):
            pixels: Any = image
        else:
            array = to_numpy(image)
            if dataformats.upper().startswith("N"):
                pixels = make_grid(array, dataformats)
            else:
                pixels = to_hwc_uint8(array, dataformats)
        if epoch is not None:
            self._epoch = float(epoch)
        self._images.append((group, name, step, self._epoch, wall_time or _now(), pixels))

    def log_record(
        self,
        kind: str,
        tag: str,
        value: Any,
        step: int,
        wall_time: float | None = None,
        encode: Encoder | None = None,
    ) -> None:
        """Record one value of an extra ``kind`` (see :mod:`.kinds`) under ``tag``.

        ``encode(value)``, when given, runs on the writer thread and returns the
        kind's data dict (for ``kind="image"``: PNG bytes, stored as an image);
        so ``value`` must not change after this call: hand over a copy. A value
        that fails to encode or breaks the kind's schema is skipped with one
        warning naming ``tag``.
        """
        if not self._live:
            self._raise_if_failed()
            return
        if kind != "image" and kind not in kinds.SCHEMAS:
            raise ValueError(
                f"unknown record kind {kind!r}; expected one of {sorted(kinds.SCHEMAS)}"
            )
        self._extras.append((kind, tag, int(step), wall_time or _now(), value, encode))

    def set_status(self, **fields: Any) -> None:
        """Add fields to the status document (e.g. ``total_steps`` for an ETA)."""
        if not self._live:
            self._raise_if_failed()
            return
        self._status_fields.update(redact(fields))
        self._status_dirty = True

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written; False on timeout."""
        if not self._live:
            self._raise_if_failed()
            return True
        done = threading.Event()
        self._flush_waiters.append(done)
        # Checked again after queueing: a writer failing in between has either
        # released this waiter already or left its error for this check.
        self._raise_if_failed()
        self._wake.set()
        flushed = done.wait(timeout)
        self._raise_if_failed()
        return flushed

    def close(self, state: str = "finished") -> None:
        """Write what is queued, close the segments and mark the run ``state``.

        Safe to call more than once; later calls do nothing. After a writer
        failure it still closes the segments and marks the run ``failed`` where
        it can, then raises :class:`RecorderError`.
        """
        if state not in fmt.STATES:
            raise ValueError(f"state must be one of {fmt.STATES}, not {state!r}")
        if not self.enabled or os.getpid() != self._pid:
            return  # another rank, or a forked child: the store is not ours to close
        if self.closed:
            self._raise_if_failed()
            return
        self.closed = True
        self._live = False
        self._state = state
        self._status_dirty = True
        self._stop = True
        self._wake.set()
        self._thread.join()
        if self._error is not None:
            self._close_after_failure()
            self._raise_if_failed()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close("finished")
            return
        # Ctrl-C ends a run someone chose to stop; anything else failed it.
        outcome = "stopped" if issubclass(exc_type, KeyboardInterrupt) else "failed"
        try:
            self.close(outcome)
        except RecorderError as err:
            # The body's own exception (a Ctrl-C, a training error) must propagate unchanged.
            log.error("%s", err)

    # --- errors ----------------------------------------------------------------

    def _raise_if_failed(self) -> None:
        error = self._error
        if error is not None:
            raise RecorderError(
                f"the snapshot writer for {self.store_dir} failed: {type(error).__name__}: {error}"
            ) from error

    def _fail(self, error: BaseException) -> None:
        """Keep ``error`` for the caller's next call and release its waiters."""
        log.error(
            "the snapshot writer for %s failed; the next recorder call raises",
            self.store_dir,
            exc_info=error,
        )
        self._error = error
        self._live = False
        while self._flush_waiters:
            self._flush_waiters.popleft().set()

    def _close_after_failure(self) -> None:
        """Close the segments and write status 'failed' as far as the failure allows."""
        self._state = "failed"
        self._sink.close_after_failure()
        try:
            self._write_status(time.time())
        except Exception as err:
            log.warning("could not mark %s failed: %s", self.store_dir, err)

    # --- setup -----------------------------------------------------------------

    def set_options(self, options: Mapping[str, Any]) -> None:
        """Replace the run's options in ``meta.pickle`` (redacted), for callers that learn
        them after the store opened (Lightning logs hyperparameters after its writer exists)."""
        self._raise_if_failed()
        meta = fmt.decode_document(self._meta_path.read_bytes(), self._meta_path)
        meta["options"] = redact(options)
        fmt.write_atomic(self._meta_path, fmt.encode_document(meta))
        self._announce(self._meta_path, closed=True)

    def _write_meta(
        self, options: Mapping[str, Any], world_size: int | None, hosts: list[str] | None
    ) -> tuple[Path, float]:
        """Write meta.pickle (merged with an earlier session's); returns its path and start time."""
        try:
            fmt.ensure_writable_dir(self.store_dir)
        except OSError as err:
            raise fmt.StoreError(
                f"can not write the snapshot store {self.store_dir}: {err.strerror or err}; "
                "choose a writable --checkpoints-dir"
            ) from None
        meta_path = self.store_dir / fmt.META_FILE
        now = time.time()
        session = {
            "start_time": now,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "world_size": world_size or 1,
        }
        meta: dict[str, Any] = {}
        if meta_path.exists():  # a resumed run appends to the same store
            try:
                meta = fmt.decode_document(meta_path.read_bytes(), meta_path)
            except fmt.StoreError as err:
                log.warning("ignoring unreadable %s from an earlier session: %s", meta_path, err)
        store = self.store_dir
        meta.update(
            format_version=fmt.FORMAT_VERSION,
            name=store.parent.name if store.name == "pickle" else store.name,
            options=redact(options),
            world_size=world_size or 1,
            hosts=list(hosts) if hosts else [socket.gethostname()],
            start_time=meta.get("start_time", now),
            sessions=[*meta.get("sessions", []), session],
        )
        fmt.write_atomic(meta_path, fmt.encode_document(meta))
        return meta_path, meta["start_time"]

    # --- writer thread -----------------------------------------------------------

    def _announce(self, path: Path, closed: bool) -> None:
        if self._on_file is not None:
            self._on_file(path, closed)

    def _run(self) -> None:
        try:
            self._announce(self._meta_path, closed=True)
            while True:
                self._wake.wait(self.flush_interval)
                self._wake.clear()
                stopping = self._stop
                # Flushes asked for before this write; released once it is done (or by
                # _fail, after the error is set, so no flush returns without seeing it).
                waiting = len(self._flush_waiters)
                self._write_pending(final=stopping)
                for _ in range(waiting):
                    self._flush_waiters.popleft().set()
                if stopping:
                    return
        except BaseException as err:  # any failure ends the thread; the caller raises it
            self._fail(err)

    def _write_pending(self, final: bool) -> None:
        failures = self._frame_scalars()
        images = self._encode_images([self._images.popleft() for _ in range(len(self._images))])
        extras, extra_images = encode_pending(
            [self._extras.popleft() for _ in range(len(self._extras))], self._epoch
        )
        images += extra_images
        if images:
            self._sink.add(fmt.IMAGES, fmt.encode_image_batch(images))
        if extras:
            self._sink.add(fmt.EXTRAS, kinds.encode_extra_batch(extras))
        wrote = self._sink.write()
        self._max_queued = self._queue_limit(self._sink.waiting_bytes)
        if wrote:
            self._status_dirty = True
        if failures:  # after this batch's other values are written
            raise failures[0]
        now = time.time()
        since_status = now - self._status_written_at
        if (
            final
            or (self._status_dirty and since_status >= _STATUS_MIN_SECONDS)
            or since_status >= self.heartbeat_seconds
        ):
            self._write_status(now)
        if final:
            self._sink.close()
        else:
            self._sink.announce_active(wrote)

    def _queue_limit(self, waiting_bytes: int) -> int:
        """Queue items allowed while ``waiting_bytes`` of frames wait for the disk."""
        return max(0, self.max_pending_bytes - waiting_bytes) // _RECORD_BYTES * RECORD_ITEMS

    def _frame_scalars(self) -> list[Exception]:
        """Frame the queued scalars for the sink; the failed device copies among them."""
        queue = self._scalars
        taken = len(queue)  # log() may append meanwhile: behind these, kept by the del
        if not taken:
            return []
        queued = queue[:taken]
        del queue[:taken]
        columns, last, failures = self._columns.convert(queued)
        if columns:
            self._sink.add(fmt.SCALARS, fmt.encode_scalar_batch(columns))
        if last is not None:  # the furthest step, not the last logged: hparams' come at step 0
            self._step = last if self._step is None else max(self._step, last)
        self._last_log_time = queued[-2]
        return failures

    def _encode_images(self, records: list[PendingImage]) -> list[fmt.ImageRecord]:
        out = []
        for group, name, step, epoch, wall_time, pixels in records:
            png = pixels if isinstance(pixels, bytes) else encode_png(pixels)
            out.append((group, name, int(step), float(epoch), wall_time, png))
        return out

    def _write_status(self, now: float) -> None:
        status = {
            **self._status_fields,
            "state": self._state,
            "step": self._step,
            "epoch": self._epoch,
            "updated": now,
            "last_log_time": self._last_log_time,
            "start_time": self._started,
            "heartbeat_seconds": self.heartbeat_seconds,
            "host": socket.gethostname(),
            "pid": self._pid,
        }
        if self._state != "running":  # closing: what is still pending now is lost, so counted
            status["unwritten_records"] = self._sink.unwritten()
        path = self.store_dir / fmt.STATUS_FILE
        try:
            fmt.write_atomic(path, fmt.encode_document(status))
        except OSError as err:
            self._sink.report_write_error("status", err)
            return
        self._status_written_at = now
        self._status_dirty = False
        self._announce(path, closed=self._state != "running")
