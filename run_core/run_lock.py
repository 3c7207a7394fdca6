"""One writer per store: an exclusive ``flock`` on a lock file in the store directory.

Two writers of the same store interleave segments and metadata of different runs
and lose data (each keeps a summary of its own series). The store's recorder holds
:class:`RunLock` from before its first file to its close
(:mod:`snapshot_store.write.store_lock`); a second writer fails at once with a
message naming the holder.

The kernel releases a ``flock`` when its holder dies, however it dies, so a
lock file left by a crash is stale by construction: the next writer gets the
lock, says whose it was, and overwrites it. The file is never removed (a
writer that removed it could race one that just opened it and end with two
holders); it is emptied on release. On a shared filesystem (NFS) the lock
holds across hosts; the message then names the other host, where the
process can be checked.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

log = logging.getLogger(__name__)

LOCK_NAME = ".writer.lock"
_MAX_HOLDER_BYTES = 4096  # the file is ours and tiny; a bigger one is not worth reading


class RunLockError(RuntimeError):
    """The store is held by another writer; the message names it and what to do."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a store's lock."""

    host: str
    pid: int
    since: float

    def describe(self) -> str:
        """``PID 123 on host "box" since 12:00:01``; says so when the host is another one."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        where = "this host" if self.host == socket.gethostname() else f"host {self.host!r}"
        return f"PID {self.pid} on {where} (since {when})"

    @classmethod
    def read(cls, f: IO[bytes]) -> Holder | None:
        """The holder written in ``f``; None when empty or unreadable (a writer mid-write)."""
        f.seek(0)
        try:
            doc = json.loads(f.read(_MAX_HOLDER_BYTES))
            return cls(str(doc["host"]), int(doc["pid"]), float(doc["since"]))
        except (ValueError, KeyError, TypeError):
            return None


class RunLock:
    """``with RunLock(store_dir):`` holds the store's writer lock; :class:`RunLockError` if taken.

    ``instead`` is what the refused writer is told to do besides waiting (the trainer's
    ``--name``; an adapter names its own way to another directory).
    """

    def __init__(
        self, store_dir: str | os.PathLike[str], instead: str = "choose another --name"
    ) -> None:
        self.store_dir = Path(store_dir)
        self.instead = instead
        self.path = self.store_dir / LOCK_NAME
        self._file: IO[bytes] | None = None

    def acquire(self) -> RunLock:
        """Take the lock (without waiting) and write this process as its holder."""
        f = self._try_lock()
        previous = Holder.read(f)
        if previous is not None:
            log.info(
                "%s: the previous writer, %s, ended without releasing it; taking over",
                self.path,
                previous.describe(),
            )
        holder = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
        f.seek(0)
        f.truncate()
        f.write(json.dumps(holder).encode())
        f.flush()
        self._file = f
        return self

    def check_free(self) -> None:
        """Raise :class:`RunLockError` if another process holds the lock now; hold nothing."""
        if not self.path.exists():
            return
        f = self._try_lock()
        f.close()  # closing the file releases the lock

    def release(self) -> None:
        """Empty the lock file (a clean end leaves no holder) and release the lock."""
        f, self._file = self._file, None
        if f is None:
            return
        try:
            f.truncate(0)
        except OSError as err:  # the lock goes with the file anyway; only the holder text stays
            log.warning("could not empty %s: %s", self.path, err)
        finally:
            f.close()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _try_lock(self) -> IO[bytes]:
        """The lock file, open and locked by this process; RunLockError naming the holder if not."""
        self.store_dir.mkdir(parents=True, exist_ok=True)
        # "a+b": created if missing, never truncated before the lock is ours.
        f = self.path.open("a+b")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Holder.read(f)
            f.close()
            who = holder.describe() if holder is not None else "another process"
            raise RunLockError(
                f"{self.store_dir} is being written by another writer, {who} (lock file "
                f"{self.path}); wait for it to end or stop it, or {self.instead}"
            ) from None
        except BaseException:
            f.close()
            raise
        return f
