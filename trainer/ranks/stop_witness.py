"""Was the whole job told to stop, or did a rank die and the launcher stop the rest?

torchrun ends a job with the same SIGTERM whether a scheduler stopped it or a
rank died (killed, out of memory) and the launcher stops the survivors. Rank 0
may get that SIGTERM before the collective that would have told it of the dead
peer, and its run would end ``stopped`` where it ``failed``. So each rank writes
into the job's store the moment a stop signal reaches it, and rank 0, stopped,
asks whether every rank was: a rank that never was did not stop, it died.

"The moment" matters: a rank whose main thread waits in a collective runs no
Python signal handler until that wait ends, which may be never once rank 0 has
left. The signal's byte on :func:`signal.set_wakeup_fd`, read by a thread of
this module, is written by the C-level handler at once.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import torch.distributed as dist

log = logging.getLogger(__name__)

# The signals of a stop: a scheduler's or launcher's SIGTERM, Ctrl-C.
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})
# How long rank 0 waits for the other ranks to say they were told to stop too.
GRACE_S = 3.0


class StopWitness:
    """Writes ``stopping/<rank>`` into ``store`` when a stop signal reaches this process."""

    def __init__(self, store: dist.Store, rank: int, world_size: int) -> None:
        self.store, self.rank, self.world_size = store, rank, world_size
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        if previous != -1:  # the program watches signals itself (an event loop): leave it be
            signal.set_wakeup_fd(previous)
            os.close(self._read)
            os.close(self._write)
            raise RuntimeError("a signal wakeup fd is already set")
        self._thread = threading.Thread(target=self._watch, name="stop-witness", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while data := os.read(self._read, 64):
            if any(signum in STOP_SIGNALS for signum in data):
                try:
                    self.store.set(f"stopping/{self.rank}", "1")
                except Exception as err:  # the launcher's store is gone: rank 0 can not tell
                    log.debug("could not tell the job's store of the stop: %s", err)
                return

    def everyone_stopping(self, grace_s: float = GRACE_S) -> bool:
        """Whether every rank was told to stop, waiting up to ``grace_s`` for their word.

        True too when the store does not answer: without it, a stop can not be told
        from a death, and the signal that came is taken at its word.
        """
        keys = [f"stopping/{rank}" for rank in range(self.world_size)]
        deadline = time.monotonic() + grace_s
        try:
            while not self.store.check(keys):
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
        except Exception as err:
            log.debug("could not ask the job's store who was stopped: %s", err)
        return True

    def close(self) -> None:
        """Give the wakeup fd back and end the thread."""
        signal.set_wakeup_fd(-1)
        os.close(self._write)  # the thread's read returns b"" and it ends
        self._thread.join(timeout=1.0)
        os.close(self._read)


def start_witness(store: dist.Store, rank: int, world_size: int) -> StopWitness | None:
    """A :class:`StopWitness` on the main thread of a process that sets no wakeup fd itself."""
    if threading.current_thread() is not threading.main_thread():
        return None  # signals reach the main thread only; a notebook's worker thread is left
    try:
        return StopWitness(store, rank, world_size)
    except (RuntimeError, ValueError, OSError) as err:
        log.debug("no stop witness: %s", err)
        return None
