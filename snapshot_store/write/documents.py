"""The run's two documents, ``meta.pickle`` and ``status.pickle``: what they hold, when
status is due, and their atomic writes.

Owned by the recorder: meta is written on the caller's thread (when the store opens
and by :meth:`RunDocuments.set_options`), status on the writer thread only.

Status also carries the run summary (:mod:`.summary`), which the writer thread
updates and a resumed run continues from the earlier status, and repeats meta's
name and options (``frames.RUN_FIELDS``): a listing of 10,000 runs reads one
document a run, not two (half the requests to a bucket).

A run that ends on a disk that filled up must still say how it ended (``failed``,
``stopped``, ``finished``): the viewer and its alerts read that from status. So
opening the store sets :data:`RESERVE_BYTES` aside in a hidden file, which the
last status write frees if it finds no room; a summary too big for that room is
left out of that last write.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from run_core.atomic import ensure_writable_dir, write_atomic
from run_core.redaction import redact
from snapshot_store.alerting.alert import Alert
from snapshot_store.alerting.sent import SENT_FIELD, sent_alerts, sent_record
from snapshot_store.format import frames as fmt
from snapshot_store.format.summary import SUMMARY_FIELDS
from snapshot_store.write.summary import SummaryKeeper

log = logging.getLogger(__name__)

# Seconds between status rewrites for new data (the heartbeat rewrites it anyway
# every heartbeat_seconds).
_STATUS_MIN_SECONDS = 1.0
# Room kept for the last status write (a status document is well under 4 kB
# without its summary, which that write drops if it must).
RESERVE_BYTES = 16 * 1024
RESERVE_FILE = ".status-reserve"  # hidden: readers, uploads and listings skip dot files
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class RunDocuments:
    """meta.pickle and status.pickle of one store; :meth:`open` writes meta first.

    The status fields the writer thread updates (``step``, ``last_log_time``,
    ``state``, :attr:`summary`) are plain attributes: one thread writes them, the
    closing caller sets ``state`` only after the writer thread is told to stop.
    """

    def __init__(self, store_dir: Path, heartbeat_seconds: float) -> None:
        self.store_dir = store_dir
        self.heartbeat_seconds = heartbeat_seconds
        self.meta_path = store_dir / fmt.META_FILE
        self.status_path = store_dir / fmt.STATUS_FILE
        self.reserve_path = store_dir / RESERVE_FILE
        self.state = "running"
        self.step: int | None = None
        self.last_log_time: float | None = None
        self.started = 0.0  # the run's first start (a resumed run keeps it)
        self.session_started = 0.0  # this session's start
        self._pid = os.getpid()
        self._fields: dict[str, Any] = {}
        self._run: dict[str, Any] = {}  # fmt.RUN_FIELDS as meta holds them
        self.summary = SummaryKeeper()
        # The alerts this run's writer delivered (a resumed run's earlier ones first): replaced
        # whole by a sender's thread, read by the writer thread, so no lock.
        self.alerts_sent: list[dict[str, Any]] = []
        self._written_at = 0.0
        self._dirty = True

    def open(
        self,
        options: Mapping[str, Any],
        world_size: int | None,
        hosts: list[str] | None,
        name: str | None = None,
    ) -> None:
        """Write meta.pickle, merged with an earlier session's (a resumed run appends); the
        run is ``name``, else its folder's (the ``<name>`` of ``<name>/pickle``)."""
        try:
            ensure_writable_dir(self.store_dir)
        except OSError as err:
            raise fmt.StoreError(
                f"can not write the snapshot store {self.store_dir}: {err.strerror or err}; "
                "choose a writable --checkpoints-dir"
            ) from None
        now = time.time()
        session = {
            "start_time": now,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "world_size": world_size or 1,
        }
        meta: dict[str, Any] = {}
        if self.meta_path.exists():  # a resumed run appends to the same store
            try:
                meta = fmt.decode_document(self.meta_path.read_bytes(), self.meta_path)
            except fmt.StoreError as err:
                log.warning(
                    "ignoring unreadable %s from an earlier session: %s", self.meta_path, err
                )
        store = self.store_dir
        meta.update(
            format_version=fmt.FORMAT_VERSION,
            name=name or (store.parent.name if store.name == "pickle" else store.name),
            options=redact(options),
            world_size=world_size or 1,
            hosts=list(hosts) if hosts else [socket.gethostname()],
            start_time=meta.get("start_time", now),
            sessions=[*meta.get("sessions", []), session],
        )
        write_atomic(self.meta_path, fmt.encode_document(meta))
        self._run = {key: meta[key] for key in fmt.RUN_FIELDS}
        self.started, self.session_started = meta["start_time"], now
        self._resume_summary()
        try:
            self.reserve_path.write_bytes(bytes(RESERVE_BYTES))
        except OSError as err:  # a disk already full: the run may still start
            self.reserve_path.unlink(missing_ok=True)
            log.warning("no room to set %d bytes aside for the last status: %s", RESERVE_BYTES, err)

    def _resume_summary(self) -> None:
        """Continue the summary of an earlier session's status; what is malformed is ignored."""
        status: dict[str, Any] = {}
        problems = []
        try:
            status = fmt.decode_document(self.status_path.read_bytes(), self.status_path)
        except FileNotFoundError:
            pass
        except (OSError, fmt.StoreError) as err:
            problems.append(str(err))
        self.alerts_sent = sent_alerts(status)
        had_segments = any(self.store_dir.glob(f"{fmt.SCALARS}-*.pickle"))
        problems += self.summary.resume(status, had_segments)
        if problems:
            log.warning(
                "ignoring what is malformed in the run summary of an earlier session's %s "
                "(%d problems; the first: %s)",
                self.status_path,
                len(problems),
                problems[0],
            )

    def set_options(self, options: Mapping[str, Any] | None, name: str = "") -> None:
        """Replace the options in meta.pickle (redacted; None keeps them) and, given one, the
        run's name (its shown name: the folder stays); status repeats both."""
        meta = fmt.decode_document(self.meta_path.read_bytes(), self.meta_path)
        if options is not None:
            meta["options"] = redact(options)
        if name:
            meta["name"] = str(name)
        write_atomic(self.meta_path, fmt.encode_document(meta))
        self._run = {key: meta[key] for key in fmt.RUN_FIELDS}
        self._dirty = True

    def set_fields(self, fields: Mapping[str, Any]) -> None:
        """Add fields to the status document (redacted), written at the next status write."""
        self._fields.update(redact(fields))
        self._dirty = True

    @property
    def name(self) -> str:
        """The run's name, as meta holds it."""
        return str(self._run.get("name", self.store_dir.name))

    @property
    def unsaved(self) -> bool:
        """Whether status has changed since it was last written."""
        return self._dirty

    def alert_sent(self, alert: Alert) -> None:
        """Every destination delivered ``alert``: the next status write records it."""
        self.alerts_sent = [*self.alerts_sent, sent_record(alert)]
        self._dirty = True

    def end(self, state: str) -> None:
        """The run ends as ``state``: the next status write says so."""
        self.state = state
        self._dirty = True

    def changed(self) -> None:
        """New data reached the store: status is due within a second."""
        self._dirty = True

    def saw_scalars(self, last_step: int | None, last_log_time: float) -> None:
        """A batch of scalars was taken from the queue; ``last_step`` its furthest step."""
        if last_step is not None:  # the furthest step, not the last logged: hparams' come at 0
            self.step = last_step if self.step is None else max(self.step, last_step)
        self.last_log_time = last_log_time

    def status_due(self, now: float, final: bool) -> bool:
        """Whether status is to be written now: at the end, for new data, or as a heartbeat."""
        since = now - self._written_at
        return (
            final
            or (self._dirty and since >= _STATUS_MIN_SECONDS)
            or since >= self.heartbeat_seconds
        )

    def write_status(self, now: float, epoch: float, unwritten: dict[str, int] | None) -> None:
        """Replace status.pickle; OSError when it can not be written (a full disk). The
        run's last status uses the room set aside at :meth:`open` if it must."""
        status = {
            **self._fields,
            **self._run,
            **self.summary.fields(),
            "state": self.state,
            "step": self.step,
            "epoch": epoch,
            "updated": now,
            "last_log_time": self.last_log_time,
            "start_time": self.started,
            # A resumed run's sessions each end: what tells one end from another.
            "session_start": self.session_started,
            "heartbeat_seconds": self.heartbeat_seconds,
            "host": socket.gethostname(),
            "pid": self._pid,
        }
        if self.alerts_sent:
            status[SENT_FIELD] = self.alerts_sent
        if unwritten is not None:  # closing: what is still pending now is lost, so counted
            status["unwritten_records"] = unwritten
        data = fmt.encode_document(status)
        try:
            write_atomic(self.status_path, data)
        except OSError as err:
            ended = self.state != "running"
            if not (ended and err.errno in _NO_SPACE and self.reserve_path.exists()):
                raise
            self.reserve_path.unlink()  # the room set aside for this write
            self._write_last(status, data)
        self._written_at = now
        self._dirty = False
        if self.state != "running":
            self.reserve_path.unlink(missing_ok=True)

    def _write_last(self, status: dict[str, Any], data: bytes) -> None:
        """The run's last status on a full disk: without the summary and options (meta
        keeps those) if the room set aside is too small for it (how the run ended
        matters more)."""
        try:
            write_atomic(self.status_path, data)
        except OSError as err:
            if err.errno not in _NO_SPACE:
                raise
            log.warning(
                "no room for the run summary in the last %s; written without it", self.status_path
            )
            left_out = (*SUMMARY_FIELDS, "options")
            small = {k: v for k, v in status.items() if k not in left_out}
            write_atomic(self.status_path, fmt.encode_document(small))
