"""Run a user's transfer hook (``--remote-transfer-cmd module.func``) off the training thread.

The hook is called as DeepLIIF calls it, ``hook(source_path)``; a hook that takes
a second positional argument also gets the path relative to the checkpoints dir
(``<name>/pickle/<file>``) so storage keys can keep the layout. A hook function
may carry a ``preflight`` attribute: a zero-argument callable run once at
start-up that raises when the destination is unusable (wrong bucket, bad
credentials), so the user learns it before training, not an hour later.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

Hook = Callable[..., object]
# Files at least this big are sent from a worker process when the hook has a spec.
PROCESS_MIN_BYTES = 64 * 1024 * 1024
_SPEC_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


class TransferSpecError(ValueError):
    """A ``--remote-transfer-cmd`` that can not be used; the message says why."""


def resolve_hook(spec: str) -> Hook:
    """Import ``module.func`` (any dotted depth) with the working directory importable."""
    if not _SPEC_RE.match(spec or ""):
        raise TransferSpecError(
            f"--remote-transfer-cmd {spec!r} is not a dotted path like 'mysave.save_to_s3'"
        )
    cwd = str(Path.cwd())
    if cwd not in sys.path and "" not in sys.path:
        # Users keep mysave.py beside the command they run, as with DeepLIIF.
        sys.path.insert(0, cwd)
    parts = spec.split(".")
    module, error = None, None
    for cut in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:cut])
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as err:
            # Only "this prefix does not exist" means try a shorter one; a module
            # that exists but fails on its own imports is the user's real error.
            if err.name is None or not name.startswith(err.name):
                raise TransferSpecError(
                    f"--remote-transfer-cmd {spec!r}: importing {name!r} failed: {err}"
                ) from err
            error = err
        except Exception as err:
            raise TransferSpecError(
                f"--remote-transfer-cmd {spec!r}: importing {name!r} raised "
                f"{type(err).__name__}: {err}"
            ) from err
    if module is None:
        raise TransferSpecError(
            f"--remote-transfer-cmd {spec!r}: no module {parts[0]!r} found in {cwd} or on "
            f"sys.path ({error}); put {parts[0]}.py in the working directory or install it"
        )
    target: object = module
    for attr in parts[cut:]:
        if not hasattr(target, attr):
            raise TransferSpecError(
                f"--remote-transfer-cmd {spec!r}: {getattr(target, '__name__', target)!r} "
                f"(from {getattr(module, '__file__', module.__name__)}) has no attribute {attr!r}"
            )
        target = getattr(target, attr)
    if not callable(target):
        raise TransferSpecError(f"--remote-transfer-cmd {spec!r}: {attr!r} is not callable")
    return target


def run_preflight(hook: Hook, spec: str = "") -> None:
    """Run the hook's ``preflight`` check, if it has one, as one clear error."""
    check = getattr(hook, "preflight", None)
    if check is None:
        return
    try:
        check()
    except Exception as err:
        raise TransferSpecError(f"transfer check failed for {spec or hook!r}: {err}") from err


def hook_caller(hook: Hook) -> Callable[[str, str], object]:
    """``call(source_path, relative_path)`` for ``hook``, deciding once whether it takes two."""
    try:
        inspect.signature(hook).bind("source", "relative")
        return hook
    except (TypeError, ValueError):
        return lambda source_path, relative_path: hook(source_path)


class TransferHookError(RuntimeError):
    """A hook failed in its worker process; the message is the hook's own error."""


class _HookProcess:
    """One ``transfer_plugins.worker`` subprocess running the hook named by a spec.

    A big file always goes to the same process (by hash of its path), so a
    plugin's in-process record of what it already sent stays right.
    """

    def __init__(self, spec: str, idle: bool) -> None:
        self.spec, self.idle = spec, idle
        self.lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None

    def call(self, source_path: str, relative_path: str) -> None:
        """Run the hook on one file in the worker; raises when it failed."""
        with self.lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                proc = self._proc = self._start()
            requests, replies = proc.stdin, proc.stdout
            assert requests is not None and replies is not None  # both opened as pipes
            try:
                requests.write(json.dumps([source_path, relative_path]) + "\n")
                requests.flush()
                line = replies.readline()
            except (BrokenPipeError, ValueError):
                line = ""
            if not line:
                code = proc.poll()
                self._proc = None
                raise TransferHookError(f"the transfer worker for {self.spec} exited (code {code})")
            reply = json.loads(line)
            if not reply.get("ok"):
                raise TransferHookError(reply.get("error", "failed"))

    def stop(self, timeout: float = 2.0) -> None:
        """End the worker: it exits when its input closes; killed if it does not."""
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None  # opened as a pipe
        try:
            proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()

    def _start(self) -> subprocess.Popen[str]:
        """Start the worker process (it imports the hook while we go on)."""
        env = dict(os.environ)
        # The user's hook module must import there as it does here (cwd, script dir).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        return subprocess.Popen(
            [sys.executable, "-m", "transfer_plugins.worker", self.spec] + ["--idle"] * self.idle,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )


class TransferRunner:
    """Worker threads that hand files to a hook, with coalescing, rate limits and retries.

    ``submit(path, closed=True)`` is for files that will not change again
    (closed segments, checkpoints): sent as soon as a worker is free.
    ``closed=False`` is for files still being written (the active segment,
    status): sent at most once per ``min_interval`` seconds. A file submitted
    again before it is sent is sent once. Failures retry with exponential
    backoff for as long as the runner runs; nothing raises into the caller.

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
        self._processes = (
            [_HookProcess(spec, idle=nice > 0) for _ in range(workers)] if spec else []
        )
        self._call = hook_caller(hook)
        self._cond = threading.Condition()
        self._due: dict[Path, float] = {}  # path -> earliest time to send it
        self._busy: set[Path] = set()
        self._again: dict[Path, bool] = {}  # resubmitted while being sent -> closed?
        self._failures: dict[Path, int] = {}
        self._last_sent: dict[Path, float] = {}
        self._draining = False
        self._stopped = False
        self.sent = 0
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

    def close(self, timeout: float = 60.0) -> list[Path]:
        """Send everything pending now (retrying within ``timeout``); return what was not sent."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._draining = True
            now = time.monotonic()
            for path in self._due:
                if not self._failures.get(path):
                    self._due[path] = now
            self._cond.notify_all()
            while (self._due or self._busy) and time.monotonic() < deadline:
                self._cond.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            self._stopped = True
            self._cond.notify_all()
        left = self.pending()
        for process in self._processes:
            process.stop()
        for thread in self._threads:
            thread.join(timeout=0.5)
        return left

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
            ok = self._send(path)
            with self._cond:
                self._busy.discard(path)
                now = time.monotonic()
                if ok:
                    self._failures.pop(path, None)
                    self._last_sent[path] = now
                else:
                    tries = self._failures[path] = self._failures.get(path, 0) + 1
                    delay = min(self.backoff[1], self.backoff[0] * 2 ** (tries - 1))
                    self._due[path] = min(self._due.get(path, now + delay), now + delay)
                closed = self._again.pop(path, None)
                if ok and closed is not None:  # changed while being sent: send again
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

    def _send(self, path: Path) -> bool:
        if not path.exists():
            log.warning("transfer: %s no longer exists; skipped", path)
            return True
        try:
            if self._processes and path.stat().st_size >= PROCESS_MIN_BYTES:
                index = zlib.crc32(str(path).encode()) % len(self._processes)
                self._processes[index].call(str(path), self._relative(path))
            else:
                self._call(str(path), self._relative(path))
        except Exception as err:  # a hook must never take training down
            tries = self._failures.get(path, 0) + 1
            level = logging.WARNING if tries in (1, 3) or tries % 10 == 0 else logging.DEBUG
            log.log(
                level,
                "transfer %s failed for %s (attempt %d): %s: %s",
                self.name,
                path,
                tries,
                type(err).__name__,
                err,
            )
            return False
        self.sent += 1
        return True

    def _relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.name
