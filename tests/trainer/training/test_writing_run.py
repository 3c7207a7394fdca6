"""trainer.training.writing_run: the transfer runner, then the store (its lock first), closed
together as the run ended."""

from __future__ import annotations

import pytest

from run_core.run_lock import LOCK_NAME, RunLock, RunLockError
from snapshot_store import Recorder, StoreError
from tests.fixtures.runs.examples import read
from trainer.training.writing_run import WritingRun


def _store_of(run_dir):
    """An ``open_store`` that records what it was given."""
    calls = []

    def open_store(on_file):
        calls.append(on_file)
        return Recorder(
            run_dir / "pickle", rank=0, on_file=on_file, instead="choose another --name"
        )

    return open_store, calls


def _hook(source_path):
    """A transfer hook that sends nothing anywhere."""


def test_a_held_store_is_refused_before_a_file_of_it_is_written(tmp_path):
    open_store, _calls = _store_of(tmp_path)
    run = WritingRun(tmp_path, open_store, hook=_hook, spec="test.hook")
    with (
        RunLock(tmp_path / "pickle"),
        pytest.raises(RunLockError, match="or choose another --name"),
    ):
        run.open()
    assert [p.name for p in (tmp_path / "pickle").iterdir()] == [LOCK_NAME]


def test_a_store_that_fails_to_open_frees_the_store(tmp_path):
    def open_store(on_file):
        raise StoreError("no store here")

    with pytest.raises(StoreError, match="no store here"):
        WritingRun(tmp_path, open_store).open()
    open_store_again, _calls = _store_of(tmp_path)
    WritingRun(tmp_path, open_store_again).open().close()  # taken at once


def test_an_unwritable_run_dir_is_a_store_error_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    open_store, _calls = _store_of(blocker)
    with pytest.raises(StoreError, match=f"can not write the snapshot store {blocker}"):
        WritingRun(blocker, open_store).open()


def test_the_run_ends_as_its_block_did_and_frees_the_store(tmp_path):
    open_store, calls = _store_of(tmp_path)
    lock = tmp_path / "pickle" / LOCK_NAME
    with pytest.raises(KeyboardInterrupt), WritingRun(tmp_path, open_store) as run:
        run.recorder.log({"loss": 1.0}, step=0)
        assert lock.read_bytes()  # held, naming this process
        raise KeyboardInterrupt
    assert calls == [None]  # no hook: the store's files go nowhere else
    assert read(tmp_path / "pickle")[2]["state"] == "stopped"
    assert lock.read_bytes() == b""  # no holder left
    run.close("finished")  # a second close does nothing: the run stays stopped
    assert read(tmp_path / "pickle")[2]["state"] == "stopped"


def test_store_files_and_sent_files_go_through_the_hook(tmp_path):
    sent = []

    def hook(source_path):
        sent.append(source_path)

    open_store, _calls = _store_of(tmp_path)
    run = WritingRun(tmp_path, open_store, hook=hook, spec="test.hook").open()
    checkpoint = tmp_path / "model.pth"
    checkpoint.write_bytes(b"weights")
    run.send(checkpoint)
    run.close("finished")
    assert run.transfer is not None and run.transfer.unsent == []
    assert {str(checkpoint), str(tmp_path / "pickle" / "status.pickle")} <= set(sent)


@pytest.mark.timeout(30)  # the default drain would wait 60 s
def test_the_close_waits_only_drain_s_for_a_hook_that_never_succeeds(tmp_path, caplog):
    """``--remote-transfer-wait``: a job near its time limit does not wait the default minute."""

    def failing(source_path):
        raise OSError("the bucket is unreachable")

    open_store, _calls = _store_of(tmp_path)
    run = WritingRun(tmp_path, open_store, hook=failing, spec="test.failing", drain_s=0.5)
    run.open()
    run.close("finished")
    assert run.transfer is not None
    assert tmp_path / "pickle" / "status.pickle" in run.transfer.unsent
    assert "were not transferred by test.failing" in caplog.text
