"""Hand a run's files to a user's transfer hook off the training thread, and say when it fails.

A failing hook never raises into training, but it is not silent either: the
first failure is a warning at once (the hook, the file, the error), a failure
that goes on is summarized every :data:`SUMMARY_INTERVAL_S`, and a recovery is
announced. What is still unsent when the runner stops is returned, for the
caller to list with the ``trainer sync`` command that sends it later.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import zlib
from pathlib import Path

from transfer_plugins.hooks import (
    Hook,
    HookProcess,
    TransferHookError,
    TransferSpecError,
    check_signature,
    hook_caller,
    resolve_hook,
    run_preflight,
)

__all__ = [
    "Hook",
    "TransferHookError",
    "TransferRunner",
    "TransferSpecError",
    "check_signature",
    "hook_caller",
    "resolve_hook",
    "run_preflight",
]

log = logging.getLogger(__name__)

# Files at least this big are sent from a worker process when the hook has a spec.
PROCESS_MIN_BYTES = 64 * 1024 * 1024
# While a hook keeps failing, one summary line this often instead of a line per file.
SUMMARY_INTERVAL_S = 60.0
# How long a run's close waits for pending uploads before naming what was not sent.
TRANSFER_DRAIN_S = 60.0


class FailureReport:
    """The console's view of a hook's failures: first one at once, then summaries, then recovery.

    Called under the runner's lock, so an episode's start, summaries and end are in order.
    """

    def __init__(self, name: str, interval: float = SUMMARY_INTERVAL_S) -> None:
        self.name, self.interval = name, interval
        self._since: float | None = None  # start of the current run of failures
        self._last_summary = 0.0
        self._most_attempts = 0

    def failed(self, path: Path, attempts: int, failing: int, error: BaseException) -> None:
        """``path`` failed for the ``attempts``-th time; ``failing`` files are failing now."""
        now = time.monotonic()
        self._most_attempts = max(self._most_attempts, attempts)
        what = f"{type(error).__name__}: {error}"
        if self._since is None:
            self._since = self._last_summary = now
            log.warning(
                "transfer %s failed for %s (attempt %d): %s; training goes on, failed files "
                "are retried (a summary every %.0f s) and any left unsent are listed at exit",
                self.name,
                path,
                attempts,
                what,
                self.interval,
            )
        elif now - self._last_summary >= self.interval:
            self._last_summary = now
            log.warning(
                "transfer %s: %d file(s) failing for %.0f s (at most %d attempts per file); "
                "latest: %s: %s",
                self.name,
                failing,
                now - self._since,
                self._most_attempts,
                path,
                what,
            )
        else:
            log.debug("transfer %s failed for %s (attempt %d): %s", self.name, path, attempts, what)

    def sent(self, failing: int) -> None:
        """A file was sent; ``failing`` files are still failing."""
        if self._since is None or failing:
            return
        log.warning(
            "transfer %s works again: every failed file is sent (failures for %.0f s, at most "
            "%d attempts per file)",
            self.name,
            time.monotonic() - self._since,
            self._most_attempts,
        )
        self._since, self._most_attempts = None, 0


class TransferRunner:
    """Worker threads that hand files to a hook, with coalescing, rate limits and retries.

    ``submit(path, closed=True)`` is for files that will not change again
    (closed segments, checkpoints): sent as soon as a worker is free.
    ``closed=False`` is for files still being written (the active segment,
    status): sent at most once per ``min_interval`` seconds. A file submitted
    again before it is sent is sent once. Failures retry with exponential
    backoff for as long as the runner runs; nothing raises into the caller, the
    console hears of them (:class:`FailureReport`). :meth:`drain` sends what is
    pending now, :meth:`stop` ends the runner and returns what is left
    (also kept as :attr:`unsent`); :meth:`close` does both.

    Hooks run ``nice`` steps below the caller's CPU priority; with a ``spec``,
    big files go to worker processes that use only idle CPU (``nice=0``: neither).
    """

    def __init__(
        self,
        hook: Hook,
        root: Path,
        *,
        workers: int = 2,
        min_interval: float = 2.0,
        backoff: tuple[float, float] = (0.5, 30.0),
        nice: int = 10,
        name: str = "",
        spec: str | None = None,
    ) -> None:
        self.hook = hook
        self.root = Path(root)
        self.name = name or getattr(hook, "__qualname__", repr(hook))
        self.min_interval = min_interval
        self.backoff = backoff
        self.nice = nice
        # With a spec, big files (checkpoints) go to worker processes started on
        # first need: a multi-GB upload's Python work (boto3's part threads,
        # checksums) then never holds the training process's GIL. Small files
        # (segments, status, logs) stay on these threads: no process start-up.
        # They run in the idle CPU class (see worker.use_idle_cpu_only); threads of this
        # process can not: one holding the GIL while starved would stall training.
        self._processes = [HookProcess(spec, idle=nice > 0) for _ in range(workers)] if spec else []
        self._call = hook_caller(hook)
        self._cond = threading.Condition()
        self._due: dict[Path, float] = {}  # path -> earliest time to send it
        self._busy: set[Path] = set()
        self._again: dict[Path, bool] = {}  # resubmitted while being sent -> closed?
        self._failures: dict[Path, int] = {}
        self._last_sent: dict[Path, float] = {}
        self._draining = False
        self._stopped = False
        self._report = FailureReport(self.name)
        self.sent = 0
        self.unsent: list[Path] = []  # what stop() left behind
        self._threads = [
            threading.Thread(target=self._work, name=f"transfer-{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    @classmethod
    def from_spec(cls, spec: str, root: Path, **kwargs) -> TransferRunner:
        """Resolve ``spec``, run its preflight check, and start a runner."""
        hook = resolve_hook(spec)
        run_preflight(hook, spec)
        return cls(hook, root, name=spec, spec=spec, **kwargs)

    def submit(self, path: Path, closed: bool = True) -> None:
        """Ask for ``path`` to be transferred; returns at once.

        Fits the recorder's ``on_file(path, closed)``.
        """
        path = Path(path)
        now = time.monotonic()
        with self._cond:
            if self._stopped:
                log.warning("transfer of %s requested after close; not sent", path)
                return
            if path in self._busy:
                self._again[path] = self._again.get(path, False) or closed
                return
            if self._failures.get(path) and path in self._due:
                return  # its retry is scheduled and will send the newest bytes: keep the backoff
            earliest = now
            if not closed and not self._draining:
                earliest = max(now, self._last_sent.get(path, -1e9) + self.min_interval)
            self._due[path] = min(self._due.get(path, earliest), earliest)
            self._cond.notify()

    def pending(self) -> list[Path]:
        """Files submitted and not yet transferred."""
        with self._cond:
            return sorted(set(self._due) | self._busy | set(self._again))

    def backlog(self) -> tuple[int, int]:
        """``(files not sent yet, their total size in bytes)``."""
        paths = self.pending()
        return len(paths), sum(_size(path) for path in paths)

    def failing(self) -> int:
        """How many files failed on their last attempt."""
        with self._cond:
            return len(self._failures)

    def drain(self, timeout: float) -> bool:
        """Send everything pending now, waiting up to ``timeout`` s; True once nothing is left.

        From the first call on, open files are no longer rate-limited. Files in
        backoff keep it: a destination that is down is not hammered.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            if not self._draining:
                self._draining = True
                now = time.monotonic()
                for path in self._due:
                    if not self._failures.get(path):
                        self._due[path] = now
                self._cond.notify_all()
            while (self._due or self._busy) and time.monotonic() < deadline:
                self._cond.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            return not (self._due or self._busy)

    def stop(self) -> list[Path]:
        """Stop sending (a file in the hook's hands is not waited for); return what is left."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.unsent = self.pending()
        for process in self._processes:
            process.stop()
        for thread in self._threads:
            thread.join(timeout=0.5)
        return self.unsent

    def close(self, timeout: float = TRANSFER_DRAIN_S) -> list[Path]:
        """Send everything pending now (retrying within ``timeout``); return what was not sent."""
        self.drain(timeout)
        return self.stop()

    def _next_path(self) -> Path | None:
        """Block until a file is due; ``None`` once stopped."""
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                if self._due:
                    path = min(self._due, key=self._due.__getitem__)
                    wait = self._due[path] - now
                    if wait <= 0:
                        del self._due[path]
                        self._busy.add(path)
                        return path
                else:
                    wait = None
                self._cond.wait(wait)
            return None

    def _work(self) -> None:
        self._lower_priority()
        while (path := self._next_path()) is not None:
            error = self._send(path)
            with self._cond:
                self._busy.discard(path)
                now = time.monotonic()
                if error is None:
                    self._failures.pop(path, None)
                    self._last_sent[path] = now
                    self._report.sent(len(self._failures))
                else:
                    tries = self._failures[path] = self._failures.get(path, 0) + 1
                    delay = min(self.backoff[1], self.backoff[0] * 2 ** (tries - 1))
                    self._due[path] = min(self._due.get(path, now + delay), now + delay)
                    self._report.failed(path, tries, len(self._failures), error)
                closed = self._again.pop(path, None)
                if error is None and closed is not None:  # changed while being sent: send again
                    earliest = now if closed or self._draining else now + self.min_interval
                    self._due[path] = min(self._due.get(path, earliest), earliest)
                self._cond.notify_all()

    def _lower_priority(self) -> None:
        """Let training win the CPU: on Linux a thread has its own nice value.

        Threads the hook starts (boto3's multipart workers) inherit it, so an
        upload on these threads takes less of the step time.
        """
        if not self.nice or not hasattr(os, "setpriority"):
            return
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + self.nice)
        except OSError as err:  # not permitted or not per-thread here: upload at normal priority
            log.debug("could not lower the transfer thread's priority: %s", err)

    def _send(self, path: Path) -> Exception | None:
        """Hand ``path`` to the hook; the error it raised, or None once sent."""
        if not path.exists():
            log.warning("transfer: %s no longer exists; skipped", path)
            return None
        try:
            if self._processes and path.stat().st_size >= PROCESS_MIN_BYTES:
                index = zlib.crc32(str(path).encode()) % len(self._processes)
                self._processes[index].call(str(path), self._relative(path))
            else:
                self._call(str(path), self._relative(path))
        except Exception as err:  # a hook must never take training down
            return err
        self.sent += 1
        return None

    def _relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.name


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # gone since it was submitted
        return 0
