"""The recorder: the public front of the store's rank-0 writer (the trainer's, users' loops).

A ``log`` call only appends to a queue; :class:`~.writer_thread.WriterThread` drains
it at least every ``flush_interval`` seconds into the segments, so the visualizer sees
points within a fraction of a second and the training thread never waits on the disk.
As in TensorBoard's ``EventFileWriter``, the thread's failure is raised on the caller's
next call. No signal or exit handlers: the process's owner calls :meth:`Recorder.close`.
One writer per store: the recorder holds its lock (:mod:`.store_lock`) until it closes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from run_core.atomic import remove_leftover_tmp_files
from run_core.endings import ended_state
from run_core.launch_env import rank_zero_only
from snapshot_store.format import frames as fmt
from snapshot_store.format.images import to_pixels
from snapshot_store.format.schema import INT64_MAX, INT64_MIN, SCHEMAS, int64_step
from snapshot_store.write.documents import RunDocuments
from snapshot_store.write.encoders import Encoder
from snapshot_store.write.frame_sink import OnFile, PendingLimitError
from snapshot_store.write.scalar_columns import RECORD_ITEMS, ScalarColumns
from snapshot_store.write.store_lock import hold_store
from snapshot_store.write.tensor_values import queued_value
from snapshot_store.write.writer_thread import Queues, WriterThread

if TYPE_CHECKING:
    from snapshot_store.alerting.on_writer import AlertSettings

log = logging.getLogger(__name__)

_now = time.time  # bound once: log() is the hot path


class RecorderError(fmt.StoreError):
    """The recorder's writer thread failed; raised on every call after it, chained from the cause."""


class Recorder:
    """Writes scalars, images and status of one run to a snapshot store.

    Only the process of global rank 0 writes: on every other rank ``Recorder(...)`` is a
    :class:`~snapshot_store.write.null_recorder.NullRecorder` (as ``Path(...)`` is a
    ``PosixPath``), whose calls record nothing and touch no file.

    Args:
        store_dir: the store, conventionally ``<checkpoints_dir>/<name>/pickle``.
        options: run options, saved in the metadata with secrets redacted.
        world_size, hosts: recorded in the metadata.
        name: the run's name in the metadata, the viewer's for it (default: its folder's).
        on_file: called on the writer thread as ``on_file(path, closed)`` for every file
            the store writes (the glossary's ``on_file``: docs/development.md); an
            exception it raises stops the writer like any other failure.
        rank: this process's global rank, when a framework named it (default: read by
            :func:`~run_core.launch_env.rank_zero_only`).
        max_pending_bytes: the most memory that logged scalars waiting for the writer thread
            and frames waiting for a full disk may hold together; reaching it raises
            :class:`RecorderError` (the values from then on are not recorded).
        instead: what a second writer of ``store_dir`` is told to do besides waiting.
        alerts: alert rules judged on the writer thread, and where alerts go
            (:mod:`snapshot_store.alerting.on_writer`); each one delivered is kept in status,
            and those still queued at close are given ``close_timeout`` seconds.

    Raises :class:`~snapshot_store.format.frames.StoreError` when ``store_dir`` can not be written,
    :class:`~run_core.run_lock.RunLockError` (one line naming the holder's PID) when another
    process writes it, :class:`~run_core.launch_env.LaunchError` for bad launcher variables.
    """

    def __new__(cls, *args: Any, rank: int | None = None, **kwargs: Any) -> Recorder:
        """A Recorder on global rank 0, a NullRecorder (a subclass: imported here) elsewhere."""
        from snapshot_store.write.null_recorder import NullRecorder

        return super().__new__(rank_zero_only(cls, NullRecorder, rank))

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
        instead: str = "give this run another directory",
        alerts: AlertSettings | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.closed = False
        self._error: BaseException | None = None
        self._epoch = 0.0
        self._queues = queues = Queues()
        self._scalars = queues.scalars  # read on every log(): one attribute, not two
        columns = ScalarColumns()
        self._copied = columns.copied  # names whose tensors changed in place: copied at log()
        # Values are taken until the recorder closes or fails. log() reads that through the
        # queue limit, -1 once closed: its one compare on the hot path, no check of its own.
        self._taking = True
        self._max_queued = -1
        self._gate = threading.Lock()  # the writer's new limit never reopens a closed gate
        self._pid = os.getpid()
        self._lock = hold_store(self.store_dir, instead)  # first: a second writer touches no file
        try:
            remove_leftover_tmp_files(self.store_dir)  # of a write killed in an earlier session
            self._documents = RunDocuments(self.store_dir, heartbeat_seconds)
            self._documents.open(options or {}, world_size, hosts, name)
        except BaseException:
            self._lock.release()
            raise
        self._writer = WriterThread(
            queues,
            columns,
            self._documents,
            on_file=on_file,
            flush_interval=flush_interval,
            segment_bytes=segment_bytes,
            segment_seconds=segment_seconds,
            max_pending_bytes=max_pending_bytes,
            epoch=self.last_epoch,
            on_queue_limit=self._set_queue_limit,
            on_fail=self._fail,
            alerts=alerts,
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

        Values are numbers or one-element tensors: a CPU tensor's value is read here, any
        other (CUDA) is kept by reference and copied by the writer thread within
        ``flush_interval``, so **do not change a logged CUDA tensor in place** (the rule and
        what breaking it costs: docs/own-loop.md). ``epoch`` is fractional (2.5 = half way
        through the third epoch); omitted, the last one given. A value that is not one real
        number is dropped with one warning per name. Raises TensorBoard's ``ValueError:
        Value out of range`` for a step outside int64, recording nothing; :class:`RecorderError`
        once the writer thread has failed (a failed device copy included: its message names
        the values) or the values waiting to be written reach ``max_pending_bytes``.
        """
        if type(step) is not int or not INT64_MIN <= step <= INT64_MAX:
            step = int64_step(step)  # an int, or the ValueError; a plain int costs two compares
        if epoch is None:
            epoch = self._epoch
        else:
            self._epoch = epoch = float(epoch)
        wall_time = wall_time or _now()
        copied, queue = self._copied, self._scalars
        for name, v in values.items():
            value = v if type(v) is float else queued_value(v, copied, group, name)
            queue.put((group, name, step, epoch, wall_time, value))  # a ScalarRecord
        if len(queue) > self._max_queued:
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
        queue = self._scalars
        queue.put((group, name, step, self._epoch, wall_time or _now(), value))  # a ScalarRecord
        if len(queue) > self._max_queued:
            self._past_queue_limit(RECORD_ITEMS)

    def last_epoch(self) -> float:
        """The epoch last given (the writer thread's for images, extras and status)."""
        return self._epoch

    def _past_queue_limit(self, just_queued: int) -> None:
        """The queue is past its limit: the gate is closed (the limit is -1: the items just
        queued are taken back), or the queue reached its share of ``max_pending_bytes``,
        which fails the recorder, loudly."""
        if not self._taking:
            del self._scalars[len(self._scalars) - just_queued :]
            self._raise_if_failed()
            return
        pending = self._writer.pending_bytes()
        self._fail(PendingLimitError(self.store_dir, pending, self._writer.max_pending_bytes))
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
        self._queues.images.append((*record, [str(caption) for caption in captions]))

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

        ``encode(value)``, when given, runs on the writer thread and returns the kind's data
        dict (``kind="image"``: PNG bytes), so ``value`` must not change after this call. A
        value that fails to encode or breaks the schema: skipped, one warning naming ``tag``.
        """
        if self._refused():
            return
        if kind != "image" and kind not in SCHEMAS:
            raise ValueError(f"unknown record kind {kind!r}; expected one of {sorted(SCHEMAS)}")
        self._queues.extras.append(
            (kind, tag, int64_step(step), wall_time or _now(), value, encode)
        )

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
        self._queues.flush_waiters.append(done)
        # Checked again after queueing: a writer failing in between has either
        # released this waiter already or left its error for this check.
        self._raise_if_failed()
        self._writer.wake()
        flushed = done.wait(timeout)
        self._raise_if_failed()
        return flushed

    def close(self, state: str = "finished") -> None:
        """Write what is queued, close the segments, mark the run ``state`` (:func:`.ended_state`)
        and free the store; later calls do nothing. After a writer failure it still closes
        the segments and marks the run ``failed`` where it can, then raises RecorderError."""
        if state not in fmt.STATES:
            raise ValueError(f"state must be one of {fmt.STATES}, not {state!r}")
        if os.getpid() != self._pid:
            return  # a forked child: the store is not ours to close
        if self.closed:
            self._raise_if_failed()
            return
        self.closed = True
        self._stop_taking()
        try:
            self._documents.end(state)
            self._writer.stop()
        finally:
            self._writer.finish(failed=self._error is not None)
            self._lock.release()  # the store is free for the next writer
        self._raise_if_failed()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, _type: object, exc: BaseException | None, _tb: object) -> None:
        try:
            self.close(ended_state(exc))
        except RecorderError as err:
            if exc is None:
                raise
            # The body's own exception (a Ctrl-C, a training error) must propagate unchanged.
            log.error("%s", err)

    def set_options(self, options: Mapping[str, Any] | None, name: str = "") -> None:
        """Replace the run's options (redacted; None keeps them) and, given one, its ``name`` in
        ``meta.pickle`` after the store opened (Lightning's hparams, W&B's ``run.name =``)."""
        if self._refused():
            return
        self._documents.set_options(options, name)
        self._writer.on_file(self._documents.meta_path, closed=True)

    # --- closed and failed -------------------------------------------------------

    def _stop_taking(self) -> None:
        """Take no more values (closing, or the writer failed); later calls raise its error."""
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
        while self._queues.flush_waiters:
            self._queues.flush_waiters.popleft().set()

    def _set_queue_limit(self, items: int) -> None:  # the writer thread's, after each round
        with self._gate:
            if self._taking:
                self._max_queued = items
