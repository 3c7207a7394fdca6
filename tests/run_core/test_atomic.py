"""Atomic writes: temporary files of a write killed midway are removed when a Recorder next
opens the run; the write probe of a store directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from run_core import atomic
from snapshot_store import Recorder

ROOT = Path(__file__).resolve().parents[2]

# Writes a checkpoint the way trainer/training/checkpoint.py does (atomic_file), and is
# killed before the write finishes.
_SLOW_WRITE = """
import sys, time
from pathlib import Path
from run_core.atomic import atomic_file
with atomic_file(Path(sys.argv[1])) as f:
    f.write(b"half a checkpoint")
    f.flush()
    print("writing", flush=True)
    time.sleep(60)
"""


def _killed_mid_write(target: Path) -> list[Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITE, str(target)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    return sorted(target.parent.glob(f".{target.name}.*.tmp"))


@pytest.mark.integration  # a writer process, killed
def test_leftover_of_a_killed_checkpoint_write_is_removed_at_the_next_start(tmp_path):
    run = tmp_path / "exp1"
    run.mkdir()
    (run / "latest.pth").write_bytes(b"the last good checkpoint")
    leftovers = _killed_mid_write(run / "latest.pth")
    assert len(leftovers) == 1
    meta_leftover = run / "pickle" / f".meta.pickle.{leftovers[0].name.split('.', 3)[3]}"
    meta_leftover.parent.mkdir()
    meta_leftover.write_bytes(b"half a meta")
    with Recorder(run / "pickle", rank=0):
        pass
    assert not list(run.rglob("*.tmp"))
    assert (run / "latest.pth").read_bytes() == b"the last good checkpoint"


def test_leftovers_named_before_pid_and_host_go_and_other_files_stay(tmp_path):
    old = tmp_path / ".latest.pth.ab12cd_9.tmp"
    old.write_bytes(b"x")
    kept = [tmp_path / "keep.tmp", tmp_path / ".hidden", tmp_path / "latest.pth"]
    for path in kept:
        path.write_bytes(b"z")
    (tmp_path / ".dir.abcdefgh.tmp").mkdir()  # only regular files are removed
    assert atomic.remove_leftover_tmp_files(tmp_path) == [old]
    assert all(path.exists() for path in kept)


@pytest.mark.integration  # a writer process
def test_a_write_in_progress_keeps_its_file_until_its_writer_is_gone(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITE, str(tmp_path / "latest.pth")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
        foreign = tmp_path / ".best.pth.1@another-host.abcdefgh.tmp"  # a writer elsewhere
        foreign.write_bytes(b"x")
        assert atomic.remove_leftover_tmp_files(tmp_path) == []
        stale = time.time() - 2 * 3600
        os.utime(foreign, (stale, stale))  # unchanged for two hours: abandoned
        assert atomic.remove_leftover_tmp_files(tmp_path) == [foreign]
    finally:
        proc.kill()
        proc.wait(10)
    assert len(atomic.remove_leftover_tmp_files(tmp_path)) == 1
    assert not list(tmp_path.glob("*.tmp"))


def test_ensure_writable_dir_creates_parents_and_leaves_no_probe(tmp_path):
    store = tmp_path / "a" / "b" / "pickle"

    atomic.ensure_writable_dir(store)
    atomic.ensure_writable_dir(store)  # an existing directory is fine too

    assert store.is_dir() and list(store.iterdir()) == []


def test_ensure_writable_dir_raises_the_os_error_as_is(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(NotADirectoryError):
        atomic.ensure_writable_dir(blocker / "run")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_ensure_writable_dir_refuses_a_directory_that_takes_no_file():
    # /proc exists and takes no new file, even from root, for whom permission bits do not count.
    with pytest.raises(OSError):
        atomic.ensure_writable_dir("/proc")
