"""Process-wide signal and exit handling, installed by the entry points, never on import.

A library that installs handlers for good surprises the program it runs in:
``trainer train`` and :func:`trainer.fit` wrap the run in :func:`terminate_as_exit`
(the previous handler is back when the run ends), and a :class:`~trainer.SummaryWriter`
its user forgot to close is closed by :func:`close_at_exit`.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from run_core.endings import ended_state
from run_core.exit_codes import ExitCode

log = logging.getLogger(__name__)


class Terminated(SystemExit):
    """SIGTERM arrived (torchrun, Slurm or Kubernetes stopping the job): unwind and exit 143
    (so the run ends ``stopped``, as :func:`~run_core.endings.ended_state` reads that status)."""


# Set by the SIGTERM handler, which also raises at once. Python prints and drops an
# exception raised while the main thread runs a destructor or a weakref callback
# (a DataLoader iterator, a tqdm bar), so the training loop checks this between steps.
_terminating = threading.Event()


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    _terminating.set()
    raise Terminated(ExitCode.TERMINATED)


def raise_if_terminated() -> None:
    """Raise :class:`Terminated` if SIGTERM arrived in :func:`terminate_as_exit` and was lost."""
    if _terminating.is_set():
        raise Terminated(ExitCode.TERMINATED)


@contextmanager
def terminate_as_exit() -> Iterator[None]:
    """Turn SIGTERM into :class:`Terminated` inside the block, so ``with`` blocks close the run.

    Ctrl-C already unwinds as KeyboardInterrupt. Signals can only be handled on
    the main thread; elsewhere (a notebook's worker thread) nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _terminating.clear()
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _terminating.clear()


def _note_terminated(signum: int, frame: FrameType | None) -> None:
    _terminating.set()


@contextmanager
def terminate_later() -> Iterator[None]:
    """Inside :func:`terminate_as_exit`, a SIGTERM in this block is only noted, not raised.

    For the close of a run that already failed: the SIGTERM torchrun sends the survivors
    once a rank died must not cut the store's close short, nor turn the failure's exit
    status into 143.
    """
    if signal.getsignal(signal.SIGTERM) is not _raise_terminated:
        yield
        return
    signal.signal(signal.SIGTERM, _note_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextmanager
def signals_at_the_end() -> Iterator[None]:
    """SIGTERM and Ctrl-C that arrive in this block are delivered again at its end.

    For code that holds a lock an exception must not cut: a signal raised inside
    tqdm's write lock leaves it half-taken, and logging prints "--- Logging error ---"
    with a traceback where one line should be. Main thread only (where handlers run).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {
        signum: signal.signal(signum, lambda number, frame: came.append(number))
        for signum in (signal.SIGINT, signal.SIGTERM)
        if signal.getsignal(signum) is not None  # None: not set from Python, left as is
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for number in dict.fromkeys(came):
            signal.raise_signal(number)  # the restored handler acts on it, here


def close_at_exit(owner: object, close: Callable[[str], object]) -> None:
    """Call ``close(state)`` when ``owner`` is collected or the interpreter exits, once.

    The state is :func:`~run_core.endings.ended_state` of the uncaught exception the program
    is ending on, if any. A process SIGTERM kills (no handler) runs no exit code at all:
    its store stays ``running`` and the viewer tells it by its silent heartbeat.
    """
    weakref.finalize(owner, _close_as_ended, close)


def _close_as_ended(close: Callable[[str], object]) -> None:
    # The interpreter sets sys.last_value when it prints an uncaught exception, before atexit.
    close(ended_state(getattr(sys, "last_value", None)))
