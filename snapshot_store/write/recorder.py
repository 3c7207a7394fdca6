"""The recorder: the public front of the store's rank-0 writer (the trainer's, users' loops).

A ``log`` call only appends to a queue; :class:`~.writer_thread.WriterThread` drains
it at least every ``flush_interval`` seconds into the segments, so the visualizer sees
points within a fraction of a second and the training thread never waits on the disk.
As in TensorBoard's ``EventFileWriter``, the thread's failure is raised on the caller's
next call. No signal or exit handlers: the process's owner calls :meth:`Recorder.close`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from run_core.atomic import remove_leftover_tmp_files
from run_core.endings import ended_state
from run_core.launch_env import global_rank
from snapshot_store.format import frames as fmt
from snapshot_store.format.images import to_pixels
from snapshot_store.format.schema import INT64_MAX, INT64_MIN, SCHEMAS, int64_step
from snapshot_store.write.documents import RunDocuments
from snapshot_store.write.encoders import Encoder
from snapshot_store.write.frame_sink import OnFile, PendingLimitError
from snapshot_store.write.scalar_columns import RECORD_ITEMS, ScalarColumns
from snapshot_store.write.tensor_values import queued_value
from snapshot_store.write.writer_thread import Queues, WriterThread

log = logging.getLogger(__name__)

_now = time.time  # bound once: log() is the hot path


class RecorderError(fmt.StoreError):
    """The recorder's writer thread failed; raised on every call after it, chained from the cause."""


class Recorder:
    """Writes scalars, images and status of one run to a snapshot store.

    Only the process of global rank 0 writes (:attr:`is_rank_zero`); on every
    other rank each call records nothing and no file is touched.

    Args:
        store_dir: the store, conventionally ``<checkpoints_dir>/<name>/pickle``.
        options: run options, saved in the metadata with secrets redacted.
        world_size, hosts: recorded in the metadata.
        name: the run's name in the metadata, the viewer's for it (default: its folder's).
        on_file: called on the writer thread as ``on_file(path, closed)`` for every
            file the store writes: meta.pickle once written, each segment when it
            is closed (``closed=True``) and after appends (``closed=False``),
            status.pickle after each write (``closed`` once the run has ended).
            An exception it raises stops the writer like any other failure.
        rank: this process's global rank (default: :func:`~run_core.launch_env.global_rank`).
        max_pending_bytes: the most memory that logged scalars waiting for the writer
            thread and frames waiting for a full disk may hold together; reaching it
            raises :class:`RecorderError` (the values from then on are not recorded).

    Raises :class:`~snapshot_store.format.frames.StoreError` when ``store_dir`` can not be written, and
    :class:`~run_core.launch_env.LaunchError` for inconsistent launcher variables.
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
        name: str | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.rank = global_rank() if rank is None else rank
        self.is_rank_zero = self.rank == 0
        self.closed = False
        self._error: BaseException | None = None
        self._epoch = 0.0
        queues = Queues()
        self._scalars = queues.scalars
        self._push = queues.scalars.extend  # bound once: log() is the hot path
        self._images = queues.images
        self._extras = queues.extras
        self._flush_waiters = queues.flush_waiters
        columns = ScalarColumns()
        self._copied = columns.copied  # names whose tensors changed in place: copied at log()
        # The one gate: rank 0 takes values until it closes or fails; other ranks take none.
        # log() reads it through the queue limit, -1 while closed: no check of its own.
        self._taking = self.is_rank_zero
        self._max_queued = -1
        self._gate = threading.Lock()  # the writer's new limit never reopens a closed gate
        if not self.is_rank_zero:
            return
        self.flush_interval = flush_interval
        self.heartbeat_seconds = heartbeat_seconds
        self.max_pending_bytes = max_pending_bytes
        self._pid = os.getpid()
        remove_leftover_tmp_files(self.store_dir)  # of a write killed in an earlier session
        self._documents = RunDocuments(self.store_dir, heartbeat_seconds)
        self._documents.open(options or {}, world_size, hosts, name)
        self._writer = WriterThread(
            queues,
            columns,
            self._documents,
            on_file=on_file,
            flush_interval=flush_interval,
            segment_bytes=segment_bytes,
            segment_seconds=segment_seconds,
            max_pending_bytes=max_pending_bytes,
            epoch=lambda: self._epoch,
            on_queue_limit=self._set_queue_limit,
            on_fail=self._fail,
        )
        # Queue items allowed now; the writer lowers it while frames wait for the disk.
        self._set_queue_limit(self._writer.queue_limit(0))
        self._writer.start()

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

        ``epoch`` is fractional (2.5 = half way through the third epoch); when omitted the last one
        given is used. A value that is not a number, has more than one element or is complex is
        dropped with one warning per name. Raises TensorBoard's ``ValueError: Value out of range``
        for a step outside int64, recording nothing; :class:`RecorderError` once the writer thread
        has failed (a failed device copy included: its message names the values) or the values
        waiting to be written reach ``max_pending_bytes``.
        """
        if type(step) is not int or not INT64_MIN <= step <= INT64_MAX:
            step = int64_step(step)  # an int, or the ValueError; a plain int costs two compares
        if epoch is None:
            epoch = self._epoch
        else:
            self._epoch = epoch = float(epoch)
        wall_time = wall_time or _now()
        copied, push = self._copied, self._push
        for name, v in values.items():
            value = v if type(v) is float else queued_value(v, copied, group, name)
            push((group, name, step, epoch, wall_time, value))  # scalar_columns.GROUP...VALUE
        if len(self._scalars) > self._max_queued:
            self._past_queue_limit(len(values) * RECORD_ITEMS)

    def log_scalar(
        self, name: str, value: Any, step: int, group: str = "train", wall_time: float | None = None
    ) -> None:
        """:meth:`log` of one value, at the last epoch given: the cheapest call (the
        ``SummaryWriter.add_scalar`` drop-in uses it). Same contract for tensors and steps."""
        if type(step) is not int or not INT64_MIN <= step <= INT64_MAX:
            step = int64_step(step)
        if type(value) is not float:
            value = queued_value(value, self._copied, group, name)
        # One record: its items in the order scalar_columns names (GROUP ... VALUE).
        self._push((group, name, step, self._epoch, wall_time or _now(), value))
        if len(self._scalars) > self._max_queued:
            self._past_queue_limit(RECORD_ITEMS)

    def _past_queue_limit(self, just_queued: int) -> None:
        """The queue is past its limit: the gate is closed (the limit is -1: the values just
        queued are taken back), or the queue reached its share of ``max_pending_bytes``,
        which fails the recorder, loudly."""
        if not self._taking:
            del self._scalars[len(self._scalars) - just_queued :]
            self._raise_if_failed()
            return
        pending = self._writer.pending_bytes()
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
        captions: Sequence[str] = (),
    ) -> None:
        """Record an image (CHW/HWC/HW, or a batch as NCHW/NHWC/NHW, tiled) as PNG.

        The pixels are copied now; PNG encoding happens on the writer thread.
        ``image`` may also be PNG bytes already. ``captions``: stored with it (one an image).
        """
        if self._refused():
            return
        step, pixels = int64_step(step), to_pixels(image, dataformats)
        if epoch is not None:
            self._epoch = float(epoch)
        record = (group, name, step, self._epoch, wall_time or _now(), pixels)
        self._images.append((*record, [str(caption) for caption in captions]))

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
        if self._refused():
            return
        if kind != "image" and kind not in SCHEMAS:
            raise ValueError(f"unknown record kind {kind!r}; expected one of {sorted(SCHEMAS)}")
        self._extras.append((kind, tag, int64_step(step), wall_time or _now(), value, encode))

    def set_status(self, **fields: Any) -> None:
        """Add fields to the status document (e.g. ``total_steps`` for an ETA)."""
        if self._refused():
            return
        self._documents.set_fields(fields)

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written; False on timeout."""
        if self._refused():
            return True
        done = threading.Event()
        self._flush_waiters.append(done)
        # Checked again after queueing: a writer failing in between has either
        # released this waiter already or left its error for this check.
        self._raise_if_failed()
        self._writer.wake()
        flushed = done.wait(timeout)
        self._raise_if_failed()
        return flushed

    def close(self, state: str = "finished") -> None:
        """Write what is queued, close the segments and mark the run ``state`` (:func:`.ended_state`).

        Safe to call more than once; later calls do nothing. After a writer
        failure it still closes the segments and marks the run ``failed`` where
        it can, then raises :class:`RecorderError`.
        """
        if state not in fmt.STATES:
            raise ValueError(f"state must be one of {fmt.STATES}, not {state!r}")
        if not self.is_rank_zero or os.getpid() != self._pid:
            return  # another rank, or a forked child: the store is not ours to close
        if self.closed:
            self._raise_if_failed()
            return
        self.closed = True
        self._stop_taking()
        self._documents.end(state)
        self._writer.stop()
        if self._error is not None:
            self._writer.close_after_failure()
            self._raise_if_failed()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.close(ended_state(exc))
        except RecorderError as err:
            if exc is None:
                raise
            # The body's own exception (a Ctrl-C, a training error) must propagate unchanged.
            log.error("%s", err)

    def set_options(self, options: Mapping[str, Any]) -> None:
        """Replace the run's options in ``meta.pickle`` (redacted), for callers that learn
        them after the store opened (Lightning logs hyperparameters after its writer exists)."""
        if self._refused():
            return
        self._documents.set_options(options)
        self._writer.on_file(self._documents.meta_path, closed=True)

    # --- the gate and errors -------------------------------------------------------

    def _stop_taking(self) -> None:
        """Close the one gate (rank 0 closing, or its writer failed): from now on each call
        records nothing and raises the writer's error, if any."""
        with self._gate:
            self._taking = False
            self._max_queued = -1

    def _refused(self) -> bool:
        """Whether the gate is closed; raises the writer's error once it has failed."""
        self._raise_if_failed()
        return not self._taking

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
        self._stop_taking()
        while self._flush_waiters:
            self._flush_waiters.popleft().set()

    def _set_queue_limit(self, items: int) -> None:  # the writer thread's, after each round
        with self._gate:
            if self._taking:
                self._max_queued = items
