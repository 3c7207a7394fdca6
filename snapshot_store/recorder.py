"""The recorder: rank-0 writer of the snapshot store, used by the trainer and by users' loops.

A ``log`` call only appends to a deque (a few hundred nanoseconds); a background
thread drains it at least every ``flush_interval`` seconds, frames the batch
and appends it to the active segment, so the visualizer sees points within a
fraction of a second and the training thread never waits on the disk.
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import signal
import socket
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Mapping

from . import frames as fmt
from .images import encode_png, make_grid, to_hwc_uint8, to_numpy
from .segments import SegmentWriter

log = logging.getLogger(__name__)

def detect_rank() -> int:
    """Global rank from the launcher's environment: RANK, SLURM_PROCID, LOCAL_RANK, else 0."""
    for var in ("RANK", "SLURM_PROCID", "LOCAL_RANK"):
        value = os.environ.get(var, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"environment variable {var}={value!r} is not an integer rank") from None
    return 0


_now = time.time


def _snapshot_value(value: Any) -> Any:
    """Freeze a value on the training thread without a device sync.

    A tensor is detached and cloned (asynchronous on GPU) so a later in-place
    update can not change what was logged; ``.item()`` runs on the writer thread.
    """
    if hasattr(value, "detach"):
        return value.detach().clone()
    return value


def _to_float(value: Any) -> float:
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


class Recorder:
    """Writes scalars, images, status and checkpoints of one run to a snapshot store.

    Only the process of global rank 0 writes; on every other rank each method
    returns at once and no file is touched.

    Args:
        store_dir: the store, conventionally ``<checkpoints_dir>/<name>/pickle``.
        options: run options, saved in the metadata with secrets redacted.
        transfer: a ``module.func`` spec or a started ``TransferRunner``: every
            written file is handed to it. Resolved and checked here, on every rank,
            so a bad spec fails before training.
        checkpoint_dir: where :meth:`save_checkpoint` writes (default: the run dir,
            the store's parent).
        transfer_root: paths given to the hook are relative to this (default: the
            checkpoints dir, so keys keep ``<name>/pickle/<file>``).
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        *,
        options: Mapping[str, Any] | None = None,
        world_size: int | None = None,
        hosts: list[str] | None = None,
        transfer: Any = None,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        transfer_root: str | os.PathLike[str] | None = None,
        flush_interval: float = 0.1,
        segment_bytes: int = 1 << 20,
        segment_seconds: float = 120.0,
        heartbeat_seconds: float = 5.0,
        transfer_timeout: float = 60.0,
        rank: int | None = None,
        handle_signals: bool = True,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else self.store_dir.parent
        self.rank = detect_rank() if rank is None else rank
        self.enabled = self.rank == 0
        self.closed = False
        self._transfer = self._make_transfer(transfer, transfer_root)
        if not self.enabled:
            return
        self.flush_interval = flush_interval
        self.heartbeat_seconds = heartbeat_seconds
        self.transfer_timeout = transfer_timeout
        self._pid = os.getpid()
        self._scalars: collections.deque = collections.deque()
        self._append_scalars = self._scalars.append  # bound once: log() is the hot path
        self._images: collections.deque = collections.deque()
        self._status_fields: dict[str, Any] = {}
        self._flush_waiters: collections.deque[threading.Event] = collections.deque()
        self._epoch = 0.0
        self._step = None
        self._last_log_time: float | None = None
        self._failed = False
        self._bad_values: set[str] = set()
        self._open_store(options or {}, world_size, hosts)
        self._segments = {
            stream: SegmentWriter(self.store_dir, stream, segment_bytes, segment_seconds)
            for stream in fmt.STREAMS
        }
        self._retry_frames: dict[str, list[bytes]] = {stream: [] for stream in fmt.STREAMS}
        self._status_written_at = 0.0
        self._status_dirty = True
        self._state = "running"
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="snapshot-writer", daemon=True)
        self._thread.start()
        _register_exit(self, handle_signals)

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

        ``epoch`` is fractional (2.5 = half way through the third epoch); when
        omitted the last one given is used.
        """
        if not self.enabled:
            return
        # Copy: callers often reuse one dict. Python floats, the common case,
        # need nothing more; anything else is frozen without a device sync.
        values = values.copy() if type(values) is dict else dict(values)
        for value in values.values():
            if type(value) is not float:
                values = {k: v if type(v) is float else _snapshot_value(v) for k, v in values.items()}
                break
        if type(step) is not int:
            step = int(step)
        if epoch is None:
            epoch = self._epoch
        else:
            self._epoch = epoch = float(epoch)
        self._append_scalars((group, step, epoch, wall_time or _now(), values))

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
        if not self.enabled:
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
            self._epoch = epoch
        self._images.append((group, name, step, self._epoch, wall_time or time.time(), pixels))

    def set_status(self, **fields: Any) -> None:
        """Add fields to the status document (e.g. ``total_steps`` for an ETA)."""
        if not self.enabled:
            return
        self._status_fields.update(fmt.redact(fields))
        self._status_dirty = True

    def save_checkpoint(self, obj: Any, filename: str) -> Path | None:
        """``torch.save`` ``obj`` atomically into the run dir and hand it to the transfer hook.

        Returns the path on rank 0, ``None`` elsewhere.
        """
        if not self.enabled:
            return None
        import torch  # only checkpoints need torch; the store itself does not

        path = self.checkpoint_dir / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        with fmt.atomic_file(path) as f:
            torch.save(obj, f)
        if self._transfer is not None:
            self._transfer.submit(path, closed=True)
        return path

    def transfer_file(self, path: str | os.PathLike[str], *, closed: bool = True) -> None:
        """Hand another file of the run (a text log, say) to the transfer hook (rank 0 only).

        ``closed=False`` for a file still growing: it is then sent at a bounded
        rate; submit it once more with ``closed=True`` when it is complete.
        """
        if self.enabled and self._transfer is not None:
            self._transfer.submit(Path(path), closed=closed)

    def flush(self, timeout: float = 10.0) -> bool:
        """Block until everything logged so far is written; False on timeout."""
        if not self.enabled or self.closed:
            return True
        done = threading.Event()
        self._flush_waiters.append(done)
        self._wake.set()
        return done.wait(timeout)

    def close(self, state: str = "finished") -> list[Path]:
        """Write what is queued, mark the run ``state``, drain transfers.

        Returns the files the transfer hook could not send (empty without one).
        Safe to call more than once; later calls do nothing.
        """
        if not self.enabled or self.closed or os.getpid() != self._pid:
            return []
        if state not in fmt.STATES:
            raise ValueError(f"state must be one of {fmt.STATES}, not {state!r}")
        self.closed = True
        self._state = state
        self._status_dirty = True
        self._stop = True
        self._wake.set()
        self._thread.join()
        return self._close_transfer()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close("failed" if exc_type is not None else "finished")

    # --- setup -----------------------------------------------------------------

    def _make_transfer(self, transfer: Any, root: Any):
        if transfer is None or transfer == "":
            return None
        from transfer_plugins.runner import TransferRunner, resolve_hook, run_preflight

        if isinstance(transfer, TransferRunner):
            return transfer if self.enabled else None
        root = Path(root) if root else self.store_dir.parent.parent
        hook = resolve_hook(transfer) if isinstance(transfer, str) else transfer
        if not self.enabled:
            return None  # resolved for the early error; only rank 0 transfers
        run_preflight(hook, str(transfer))
        spec = transfer if isinstance(transfer, str) else None  # a spec runs in worker processes
        return TransferRunner(hook, root, name=str(transfer), spec=spec)

    def _open_store(self, options: Mapping[str, Any], world_size, hosts) -> None:
        try:
            self.store_dir.mkdir(parents=True, exist_ok=True)
            probe = self.store_dir / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as err:
            raise fmt.StoreError(
                f"can not write the snapshot store {self.store_dir}: {err.strerror or err}; "
                "choose a writable --checkpoints-dir"
            ) from None
        meta_path = self.store_dir / fmt.META_FILE
        now = time.time()
        session = {"start_time": now, "host": socket.gethostname(), "pid": os.getpid(),
                   "world_size": world_size or 1}
        meta: dict[str, Any] = {}
        if meta_path.exists():  # a resumed run appends to the same store
            try:
                meta = fmt.decode_document(meta_path.read_bytes(), meta_path)
            except fmt.StoreError as err:
                log.warning("ignoring unreadable %s from an earlier session: %s", meta_path, err)
        meta.update(
            format_version=fmt.FORMAT_VERSION,
            name=self.store_dir.parent.name if self.store_dir.name == "pickle" else self.store_dir.name,
            options=fmt.redact(dict(options)),
            world_size=world_size or 1,
            hosts=list(hosts) if hosts else [socket.gethostname()],
            start_time=meta.get("start_time", now),
            sessions=[*meta.get("sessions", []), session],
        )
        fmt.write_atomic(meta_path, fmt.encode_document(meta))
        self._started = meta["start_time"]
        if self._transfer is not None:
            self._transfer.submit(meta_path, closed=True)

    def _close_transfer(self) -> list[Path]:
        if self._transfer is None:
            return []
        left = self._transfer.close(self.transfer_timeout)
        if left:
            run_dir = self.store_dir.parent
            log.warning(
                "%d file(s) were not transferred by %s: %s. Once the destination is reachable, "
                "run: python -m trainer sync %s --remote-transfer-cmd %s",
                len(left), self._transfer.name, ", ".join(str(p) for p in left),
                run_dir, self._transfer.name,
            )
        return left

    # --- writer thread -----------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            stopping = self._stop
            waiters = [self._flush_waiters.popleft() for _ in range(len(self._flush_waiters))]
            try:
                self._write_pending(final=stopping)
            except Exception:  # keep the thread alive: a lost flush beats a dead writer
                log.exception("snapshot writer failed; retrying at the next flush")
            for waiter in waiters:
                waiter.set()
            if stopping:
                return

    def _write_pending(self, final: bool) -> None:
        wrote: set[str] = set()
        scalars = [self._scalars.popleft() for _ in range(len(self._scalars))]
        if scalars:
            self._retry_frames[fmt.SCALARS].append(fmt.encode_scalar_batch(self._columns(scalars)))
        images = [self._images.popleft() for _ in range(len(self._images))]
        if images:
            self._retry_frames[fmt.IMAGES].append(fmt.encode_image_batch(self._encode_images(images)))
        for stream, frames in self._retry_frames.items():
            while frames:
                try:
                    closed = self._segments[stream].append(frames[0])
                except OSError as err:
                    self._report_write_error(stream, err)
                    break
                frames.pop(0)
                wrote.add(stream)
                if closed is not None and self._transfer is not None:
                    self._transfer.submit(closed, closed=True)
        if wrote:
            self._status_dirty = True
        now = time.time()
        if final or (self._status_dirty and now - self._status_written_at >= 1.0) or (
            now - self._status_written_at >= self.heartbeat_seconds
        ):
            self._write_status(now)
        for stream in wrote:
            active = self._segments[stream].active_path
            if self._transfer is not None and active is not None and not final:
                self._transfer.submit(active, closed=False)
        if final:
            for stream, segment in self._segments.items():
                closed = segment.close()
                if closed is not None and self._transfer is not None:
                    self._transfer.submit(closed, closed=True)
                if self._retry_frames[stream]:
                    log.error("%d batch(es) of %s could not be written to %s (disk full?)",
                              len(self._retry_frames[stream]), stream, self.store_dir)

    def _columns(self, records: list[tuple]) -> list[fmt.SeriesColumns]:
        """Transpose logged records into per-series columns.

        Records are grouped by their (group, names) shape first, so the per-point
        work is list comprehensions rather than one dict lookup per value.
        """
        shapes: dict[tuple, list[tuple]] = {}
        for record in records:
            shapes.setdefault((record[0], *record[4]), []).append(record)
        series: dict[tuple[str, str], fmt.SeriesColumns] = {}
        for (group, *names), recs in shapes.items():
            steps = [r[1] for r in recs]
            epochs = [r[2] for r in recs]
            times = [r[3] for r in recs]
            for name in names:
                values = [r[4][name] for r in recs]
                keep = None
                if not all(type(v) is float for v in values):
                    values, keep = self._convert(group, name, values)
                cols = series.get((group, name))
                if cols is None:
                    cols = series[(group, name)] = (group, name, [], [], [], [])
                if keep is None:
                    cols[2].extend(steps)
                    cols[3].extend(epochs)
                    cols[4].extend(times)
                else:
                    cols[2].extend(steps[i] for i in keep)
                    cols[3].extend(epochs[i] for i in keep)
                    cols[4].extend(times[i] for i in keep)
                cols[5].extend(values)
        if records:
            self._step = records[-1][1]
            self._last_log_time = records[-1][3]
        return [cols for cols in series.values() if cols[2]]

    def _convert(self, group: str, name: str, values: list) -> tuple[list[float], list[int] | None]:
        """Floats of ``values``; indexes kept, or None when every value converted."""
        out, keep = [], []
        for i, value in enumerate(values):
            try:
                out.append(value if type(value) is float else _to_float(value))
                keep.append(i)
            except (TypeError, ValueError, RuntimeError):
                self._warn_bad_value(group, name, value)
        return out, (None if len(keep) == len(values) else keep)

    def _warn_bad_value(self, group: str, name: str, value: Any) -> None:
        if (group, name) not in self._bad_values:
            self._bad_values.add((group, name))
            log.warning("%s/%s: value %r is not a number; not recorded", group, name, value)

    def _encode_images(self, records: list[tuple]) -> list[fmt.ImageRecord]:
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
        path = self.store_dir / fmt.STATUS_FILE
        try:
            fmt.write_atomic(path, fmt.encode_document(status))
        except OSError as err:
            self._report_write_error("status", err)
            return
        self._status_written_at = now
        self._status_dirty = False
        if self._transfer is not None:
            self._transfer.submit(path, closed=self._state != "running")

    def _report_write_error(self, what: str, err: OSError) -> None:
        now = time.monotonic()
        if now - getattr(self, "_last_error_report", -1e9) >= 30.0:
            self._last_error_report = now
            log.error(
                "can not write %s to %s: %s. Logged values are kept in memory and written "
                "when space frees up; free disk space or move --checkpoints-dir.",
                what, self.store_dir, err.strerror or err,
            )


# --- process exit and signals ------------------------------------------------------

_open_recorders: "weakref.WeakSet[Recorder]" = weakref.WeakSet()
_exit_hook_installed = False
_signals_installed = False
_uncaught_exception = False


def _register_exit(recorder: Recorder, handle_signals: bool) -> None:
    """Close every open recorder at interpreter exit and on SIGTERM/SIGINT."""
    global _exit_hook_installed, _signals_installed
    _open_recorders.add(recorder)
    if not _exit_hook_installed:
        _exit_hook_installed = True
        atexit.register(_close_all)
        previous_excepthook = sys.excepthook

        def excepthook(*args):
            global _uncaught_exception
            _uncaught_exception = True
            previous_excepthook(*args)

        sys.excepthook = excepthook
    # Handlers can only be installed from the main thread.
    if handle_signals and not _signals_installed and threading.current_thread() is threading.main_thread():
        _signals_installed = True
        for signum in (signal.SIGTERM, signal.SIGINT):
            _chain_signal(signum)


def _close_all(state: str | None = None) -> None:
    for recorder in list(_open_recorders):
        try:
            recorder.close(state or ("failed" if _uncaught_exception else "finished"))
        except Exception:
            log.exception("closing the recorder for %s failed", recorder.store_dir)


def _chain_signal(signum: int) -> None:
    previous = signal.getsignal(signum)

    def handler(sig, frame):
        if sig == signal.SIGTERM:
            _close_all("failed")  # torchrun's way of stopping a worker: write all, then go
        else:
            for recorder in list(_open_recorders):
                recorder.flush(timeout=5.0)
        if callable(previous):
            previous(sig, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)

    signal.signal(signum, handler)
