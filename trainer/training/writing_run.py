"""What every run that writes a store opens and closes: the transfer runner and the store.

The one composition root of a writing run, whoever drives it: the ``fit``
loop's :class:`~trainer.training.session.RunSession` adds the training parts
around it (console, checkpoints, live view, system metrics), the
:class:`~trainer.SummaryWriter` opens its ``log_dir`` with it (and so the framework
adapters, whose runs are a ``SummaryWriter``). It lives here, below them, because it
needs the store, the transfer runner and the trainer's drain
(:func:`~trainer.training.sync.send_remaining`), and imports run one way:
``integrations`` may import ``trainer``, never the reverse.

One writer per store: the store's :class:`~snapshot_store.Recorder` takes the run lock
(:class:`~run_core.run_lock.RunLock`) before it touches a file of the store, so a
second process is refused with one line naming the first's PID, whichever way it
came in (a bare ``Recorder`` too). Opened in the order that fails early: the
transfer runner (threads, no file), then the store; a refused store stops the runner.
Closed the other way round, together: the store ends as the run ended
(:func:`~run_core.endings.ended_state`'s vocabulary), freeing the store, and what the
hook still holds is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from run_core.endings import ended_state
from snapshot_store import Recorder
from trainer.training.sync import send_remaining
from transfer_plugins.runner import TRANSFER_DRAIN_S, Hook, TransferRunner

# Opens the run's store, given where its files go (None: nowhere beyond the disk).
OpenStore = Callable[[Callable[[Path, bool], None] | None], Recorder]


class WritingRun:
    """One writer's run: ``with WritingRun(...) as run:``, or :meth:`open` then :meth:`close`.

    Args:
        run_dir: the directory of the run (the trainer's ``<checkpoints>/<name>``, an
            adapter's or a ``SummaryWriter``'s store), named in messages.
        open_store: opens the store (a :class:`~snapshot_store.Recorder`, which holds the
            store for one writer until it is closed), given the callback its files go to.
        hook: the transfer hook, resolved and checked, that every file is handed to.
        spec: the hook's ``module.func``, for messages and the ``trainer sync`` command.
        transfer_root: what transferred paths are relative to.
        sync_dir: the dir ``trainer sync`` sends again, named when files are left unsent
            (None: no command is named).
        log_file: the run's text log, sent last when the run closes.
        drain_s: how long the close waits for the hook to send what is left.
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
        drain_s: float = TRANSFER_DRAIN_S,
    ) -> None:
        self.run_dir = Path(run_dir)
        self._open_store = open_store
        self._hook, self._spec = hook, spec
        self._transfer_root = Path(transfer_root) if transfer_root is not None else self.run_dir
        self._sync_dir, self._log_file = sync_dir, log_file
        self._drain_s = drain_s
        self.transfer: TransferRunner | None = None
        self._recorder: Recorder | None = None

    @property
    def recorder(self) -> Recorder:
        """The store's recorder (once open)."""
        if self._recorder is None:
            raise RuntimeError(f"{self.run_dir}: the run is not open")
        return self._recorder

    def open(self) -> WritingRun:
        """Start the transfer runner, open the store (its lock first); on failure stop the runner."""
        if self._hook is not None:
            self.transfer = TransferRunner(
                self._hook, self._transfer_root, name=self._spec or "", spec=self._spec
            )
        try:
            self._recorder = self._open_store(
                self.transfer.submit if self.transfer is not None else None
            )
        except BaseException:  # a held or unwritable store: stop the runner's threads
            if self.transfer is not None:
                self.transfer.close(0)
            raise
        return self

    def send(self, path: Path, closed: bool = True) -> None:
        """Hand a file of the run (a checkpoint, the growing log) to the hook, if one is set."""
        if self.transfer is not None:
            self.transfer.submit(path, closed=closed)

    def close(self, state: str = "finished") -> None:
        """Close the store as ``state`` (``finished``, ``stopped`` or ``failed``), which frees
        it for the next writer, then send what the hook still holds (up to ``drain_s``, a minute by
        default; Ctrl-C skips; what is left is named). Closing a closed run does nothing."""
        if self._recorder is None or self._recorder.closed:
            return
        try:
            self._recorder.close(state)
        finally:
            if self.transfer is not None:
                send_remaining(
                    self.transfer, self._sync_dir, self._drain_s, log_file=self._log_file
                )

    def __enter__(self) -> WritingRun:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(ended_state(exc))
