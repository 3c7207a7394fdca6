"""run_core.run_lock: one writer per run dir, the holder named, a crashed holder's lock taken over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from run_core.run_lock import LOCK_NAME, RunLock, RunLockError


def test_a_second_lock_on_the_same_run_dir_fails_naming_the_holder(tmp_path):
    with RunLock(tmp_path / "run"):
        with pytest.raises(RunLockError) as taken:
            RunLock(tmp_path / "run").acquire()
        with pytest.raises(RunLockError):
            RunLock(tmp_path / "run").check_free()
    message = str(taken.value)
    assert f"PID {os.getpid()} on this host" in message and "--name" in message
    assert str(tmp_path / "run" / LOCK_NAME) in message


def test_released_lock_is_free_and_empty(tmp_path):
    with RunLock(tmp_path):
        pass
    RunLock(tmp_path).check_free()
    assert (tmp_path / LOCK_NAME).read_bytes() == b""
    with RunLock(tmp_path):  # taken again at once
        assert str(os.getpid()) in (tmp_path / LOCK_NAME).read_text()


def test_another_hosts_holder_is_named_with_its_host(tmp_path):
    holder = RunLock(tmp_path).acquire()
    # As a writer on another host of a shared filesystem would have written it.
    (tmp_path / LOCK_NAME).write_text('{"host": "node-7", "pid": 4242, "since": 0}')
    try:
        with pytest.raises(RunLockError, match="PID 4242 on host 'node-7'"):
            RunLock(tmp_path).acquire()
    finally:
        holder.release()


@pytest.mark.integration
def test_lock_of_a_killed_holder_is_stale_and_taken_over(tmp_path, caplog):
    code = (
        "import sys, time; from run_core.run_lock import RunLock; "
        f"lock = RunLock({str(tmp_path)!r}).acquire(); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(RunLockError, match=f"PID {holder.pid} on this host"):
            RunLock(tmp_path).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    with caplog.at_level("INFO"), RunLock(tmp_path):  # never waits: flock without blocking
        assert str(os.getpid()) in (tmp_path / LOCK_NAME).read_text()
    assert f"PID {holder.pid} on this host" in caplog.text and "taking over" in caplog.text
