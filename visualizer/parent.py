"""Notice when the process that started this one is gone, so a killed parent leaves nothing behind.

Used by the visdom server child (``python -m visualizer.server --child``) and by
``python -m visualizer --parent-pid PID`` (the trainer's live view); and SIGTERM,
how that parent asks the visualizer to stop.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

CHECK_INTERVAL_S = 1.0


def process_alive(pid: int) -> bool:
    """True while a process ``pid`` exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch_parent(
    pid: int, on_gone: Callable[[], None], interval: float = CHECK_INTERVAL_S
) -> threading.Thread:
    """Call ``on_gone`` once, from a daemon thread, after process ``pid`` ends.

    When ``pid`` is this process's parent, being re-parented is the sign (a dead
    parent that is still a zombie counts as gone); otherwise ``pid`` is probed
    with signal 0.
    """
    if os.getppid() == pid:

        def alive() -> bool:
            return os.getppid() == pid

    else:

        def alive() -> bool:
            return process_alive(pid)

    def watch() -> None:
        while alive():
            time.sleep(interval)
        log.warning("parent process %d is gone", pid)
        on_gone()

    thread = threading.Thread(target=watch, name=f"watch-parent-{pid}", daemon=True)
    thread.start()
    return thread


@contextmanager
def stop_on_sigterm(stop: Callable[[], None]) -> Iterator[None]:
    """SIGTERM calls ``stop`` (the follower's: a last pass, then exit): how the trainer ends its live view."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set signal handlers
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: stop())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
