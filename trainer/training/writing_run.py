"""What every run that writes a store opens and closes: the run lock, the transfer runner, the store.

The one composition root of a writing run, whoever drives it: the ``fit``
loop's :class:`~trainer.training.session.RunSession` adds the training parts
around it (console, checkpoints, live view, system metrics), and the framework
adapters' ``integrations._run.MonitorRun`` adds their naming rules. It lives
here, below both, because it needs the store, the transfer runner and the
trainer's drain (:func:`~trainer.training.sync.send_remaining`), and imports run
one way: ``integrations`` may import ``trainer``, never the reverse.

Opened in the order that fails early: the lock first (a second writer must touch
no file of the run), then the transfer runner (the store's first files go to it),
then the store. Closed the other way round, together: the store ends as the run
ended (:func:`~run_core.endings.ended_state`'s vocabulary), what the hook still
holds is sent, and the lock goes last.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from run_core.endings import ended_state
from run_core.run_lock import RunLock
from snapshot_store import Recorder, StoreError
from trainer.training.sync import send_remaining
from transfer_plugins.runner import Hook, TransferRunner

# Opens the run's store, given where its files go (None: nowhere beyond the disk).
OpenStore = Callable[[Callable[[Path, bool], None] | None], Recorder]


class WritingRun:
    """One writer's run: ``with WritingRun(...) as run:``, or :meth:`open` then :meth:`close`.

    Args:
        run_dir: the directory this writer owns, held for one writer by
            :class:`~run_core.run_lock.RunLock` from :meth:`open` to :meth:`release`.
        open_store: opens the store (a :class:`~snapshot_store.Recorder`, or the one a
            :class:`~trainer.SummaryWriter` holds), given the callback its files go to.
        hook: the transfer hook, resolved and checked, that every file is handed to.
        spec: the hook's ``module.func``, for messages and the ``trainer sync`` command.
        transfer_root: what transferred paths are relative to.
        sync_dir: the dir ``trainer sync`` sends again, named when files are left unsent
            (None: no command is named).
        log_file: the run's text log, sent last when the run closes.
        instead: what a second writer is told to do instead of waiting for this one.
    """

    def __init__(
        self,
        run_dir: Path,
        open_store: OpenStore,
        *,
        hook: Hook | None = None,
        spec: str | None = None,
        transfer_root: Path | None = None,
        sync_dir: Path | None = None,
        log_file: Path | None = None,
        instead: str = "choose another --name",
    ) -> None:
        self.run_dir = Path(run_dir)
        self._open_store = open_store
        self._hook, self._spec = hook, spec
        self._transfer_root = Path(transfer_root) if transfer_root is not None else self.run_dir
        self._sync_dir, self._log_file = sync_dir, log_file
        self._lock = RunLock(self.run_dir, instead=instead)
        self.transfer: TransferRunner | None = None
        self._recorder: Recorder | None = None

    @property
    def recorder(self) -> Recorder:
        """The store's recorder (once open)."""
        if self._recorder is None:
            raise RuntimeError(f"{self.run_dir}: the run is not open")
        return self._recorder

    def open(self) -> WritingRun:
        """Take the lock, start the transfer runner, open the store; on failure undo them."""
        try:
            self._lock.acquire()  # RunLockError naming the holder: nothing of the run touched
        except OSError as err:  # as the store says it, which is what cannot be written
            raise StoreError(f"can not write {self.run_dir}: {err.strerror or err}") from None
        try:
            if self._hook is not None:
                self.transfer = TransferRunner(
                    self._hook, self._transfer_root, name=self._spec or "", spec=self._spec
                )
            self._recorder = self._open_store(
                self.transfer.submit if self.transfer is not None else None
            )
        except BaseException:  # an unwritable store: stop the runner's threads, free the run
            if self.transfer is not None:
                self.transfer.close(0)
            self._lock.release()
            raise
        return self

    def send(self, path: Path, closed: bool = True) -> None:
        """Hand a file of the run (a checkpoint, the growing log) to the hook, if one is set."""
        if self.transfer is not None:
            self.transfer.submit(path, closed=closed)

    def finish(self, state: str) -> None:
        """Close the store as ``state`` (``finished``, ``stopped`` or ``failed``), then send
        what the hook still holds (up to a minute; Ctrl-C skips; what is left is named)."""
        try:
            if self._recorder is not None:
                self._recorder.close(state)
        finally:
            if self.transfer is not None:
                send_remaining(self.transfer, self._sync_dir, log_file=self._log_file)

    def release(self) -> None:
        """Free the run for the next writer (the lock file is emptied: no holder left)."""
        self._lock.release()

    def close(self, state: str = "finished") -> None:
        """:meth:`finish` as ``state``, then :meth:`release`."""
        try:
            self.finish(state)
        finally:
            self.release()

    def __enter__(self) -> WritingRun:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(ended_state(exc))
