"""watch_parent(): the one 'is my parent still there' helper of the live view and the visdom child."""

from __future__ import annotations

import os
import threading

from visualizer.parent import process_alive, watch_parent

NO_SUCH_PID = 2**30  # above Linux's largest pid_max


def test_process_alive():
    assert process_alive(os.getpid())
    assert not process_alive(NO_SUCH_PID)


def test_on_gone_is_called_once_the_process_has_ended():
    gone = threading.Event()
    watch_parent(NO_SUCH_PID, gone.set, interval=0.01)
    assert gone.wait(60)


def test_a_living_parent_is_left_alone():
    gone = threading.Event()
    thread = watch_parent(os.getppid(), gone.set, interval=0.1)  # checks until pytest exits
    assert not gone.wait(0.3) and thread.is_alive() and thread.daemon
