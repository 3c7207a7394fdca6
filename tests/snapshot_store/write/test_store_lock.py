"""snapshot_store.write.store_lock: one process writes a store, whatever opened it."""

from __future__ import annotations

import os

import pytest

from run_core.run_lock import LOCK_NAME, RunLockError
from snapshot_store import Recorder, StoreError
from tests.fixtures.runs.examples import read
from tests.fixtures.servers.processes import holding


@pytest.mark.integration
def test_a_second_processs_recorder_is_refused_naming_the_first_and_writes_nothing(tmp_path):
    store = tmp_path / "run" / "pickle"
    code = (
        "import sys; from snapshot_store import Recorder; "
        f"rec = Recorder({str(store)!r}, rank=0); rec.log({{'first': 1.0}}, step=0); "
        "print('held', flush=True); sys.stdin.read(); rec.close()"
    )
    with holding(code) as first, pytest.raises(RunLockError) as refused:
        Recorder(store, rank=0)
    message = str(refused.value)
    assert f"{store} is being written by another writer, PID {first.pid} on this host" in message
    assert message.endswith("or give this run another directory") and "\n" not in message
    with Recorder(store, rank=0) as rec:  # free once the first closed
        rec.log({"second": 2.0}, step=1)
    _history, meta, status = read(store)
    assert set(status["series"]) == {"train/first", "train/second"}
    assert len(meta["sessions"]) == 2  # the refused writer wrote nothing


def test_the_same_process_writes_again_once_it_closed(tmp_path):
    held = pytest.raises(RunLockError, match=f"PID {os.getpid()} on this host")
    with Recorder(tmp_path, rank=0), held:
        Recorder(tmp_path, rank=0)  # two writers in one process: refused as well
    with Recorder(tmp_path, rank=0):
        assert (tmp_path / LOCK_NAME).read_bytes()  # held, naming this process
    assert (tmp_path / LOCK_NAME).read_bytes() == b""  # closed: no holder left


def test_an_unwritable_store_is_a_store_error_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=f"can not write the snapshot store {blocker}/pickle"):
        Recorder(blocker / "pickle", rank=0)
