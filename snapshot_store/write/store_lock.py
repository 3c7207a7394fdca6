"""One writer per store: the recorder holds the store's run lock from before its first file to its close.

Whatever opened the store (the trainer, ``SummaryWriter``, an adapter, a user's own
loop with a bare ``Recorder``), a second process given the same store is refused with
one line naming the first's PID (:class:`~run_core.run_lock.RunLockError`), before it
touches a file: two writers of one store would each keep a summary of its own series,
and the last to write status would drop the other's from the runs table.
"""

from __future__ import annotations

from pathlib import Path

from run_core.run_lock import RunLock
from snapshot_store.format import frames as fmt


def hold_store(store_dir: Path, instead: str) -> RunLock:
    """``store_dir``'s writer lock, held by this process until its ``release()``.

    ``instead``: what a refused writer is told to do besides waiting. A store that can
    not be written is a :class:`~snapshot_store.format.frames.StoreError` saying so.
    """
    try:
        return RunLock(store_dir, instead=instead).acquire()
    except OSError as err:  # RunLockError is no OSError: it names the holder as it is
        raise fmt.StoreError(
            f"can not write the snapshot store {store_dir}: {err.strerror or err}"
        ) from None
