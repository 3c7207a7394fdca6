"""What the framework adapters share: kept names, version checks, the run's writer."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from integrations._run import MonitorRun, UnsupportedVersionError, require_version
from run_core.run_lock import RunLockError
from run_core.tags import key_of, tag_of
from snapshot_store import StoreError, read_store
from tests.fixtures.runs.examples import read
from tests.fixtures.servers.waiting import CtrlCWhenIn


def test_every_name_is_kept_and_two_names_never_merge(tmp_path):
    store = tmp_path / "run" / "pickle"
    run = MonitorRun(store, tmp_path)
    names = ["loss", "train_loss", "train/loss", "training_loss", "eval/loss", "val_loss_step"]
    run.log({name: float(i) for i, name in enumerate(names)}, 3)
    run.close()
    history, _meta, _status = read(store)
    assert sorted(tag_of(*key) for key in history.keys()) == sorted(names)
    assert [history.series(key_of(name))[3] for name in names] == [[float(i)] for i in range(6)]


def test_a_version_outside_the_range_is_refused_naming_the_range():
    require_version("X", "lightning", "2.6.6", ">=2.1,<3")
    require_version("X", "lightning", "2.7.0.dev0", ">=2.1,<3")  # a nightly inside the range
    with pytest.raises(
        UnsupportedVersionError, match=r"X supports lightning >=2.1,<3; lightning 1\.9\.5"
    ):
        require_version("X", "lightning", "1.9.5", ">=2.1,<3")


def test_bad_values_are_skipped_with_one_warning_text_is_text_and_the_run_goes_on(tmp_path, caplog):
    store = tmp_path / "run" / "pickle"
    run = MonitorRun(store, tmp_path, options={"lr": 0.1, "api_token": "s3cret"})
    with caplog.at_level(logging.WARNING):
        for step in range(3):
            run.log({"train_loss": 1.0 / (step + 1), "val_note": "abc", "bad": [1, 2]}, step)
        run.log({"train_loss": float("nan")}, 3)
        run.log({"train_loss": float("inf")}, 4)
        run.close()
    history, meta, status = read(store)
    assert history.series(("", "train_loss"))[0] == [0, 1, 2, 3, 4]
    assert sorted(history.keys()) == [("", "train_loss")]
    texts = [r for r in read_store(store)[2].extras if r[0] == "text"]
    assert [(tag, step) for _kind, tag, step, _wall, _data in texts] == [
        ("val_note", s) for s in range(3)
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum(w.startswith("bad: list is not a number") for w in warnings) == 1
    assert sum("train_loss: non-finite" in w for w in warnings) == 1
    assert meta["options"] == {"lr": 0.1, "api_token": "***"}
    assert status["state"] == "finished"


def test_steps_default_to_tensorboards_0_and_dicts_get_a_window(tmp_path):
    store = tmp_path / "run" / "pickle"
    run = MonitorRun(store, tmp_path)
    run.log({"loss": 1.0}, None)
    run.log({"loss": 0.5, "losses": {"a": 1.0, "b": 2.0}}, 1)
    run.log({"loss": 0.25}, 10)
    run.set_options({"hidden": 16})
    run.close()
    history, meta, _ = read(store)
    assert history.series(("", "loss"))[0] == [0, 1, 10]
    assert history.series(("losses", "b"))[0] == [1]
    assert meta["options"] == {"hidden": 16} and len(meta["sessions"]) == 1


def test_store_files_and_sent_files_go_through_the_transfer_hook(tmp_path, monkeypatch):
    target = tmp_path / "remote"
    target.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(target))
    root = tmp_path / "checkpoints"
    checkpoint = root / "run" / "model.ckpt"
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"weights")
    run = MonitorRun(root / "run" / "pickle", root, transfer_spec="transfer_plugins.local.copy_to")
    run.log({"loss": 1.0}, 0)
    run.send([checkpoint])
    run.set_options({"lr": 0.5})
    run.close()
    assert (target / "run" / "model.ckpt").read_bytes() == b"weights"
    history, meta, status = read(target / "run" / "pickle")
    assert history.series(("", "loss"))[3] == [1.0]
    assert meta["options"] == {"lr": 0.5} and status["state"] == "finished"


def test_close_drains_as_the_trainer_does_and_names_what_was_not_sent(
    tmp_path, monkeypatch, caplog
):
    """The trainer's drain (progress, Ctrl-C skips it); no sync command: no run dir is known."""
    (tmp_path / "downhook.py").write_text(
        "def save(source_path):\n    raise ConnectionError('destination down')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    root = tmp_path / "checkpoints"
    run = MonitorRun(root / "run" / "pickle", root, transfer_spec="downhook.save")
    run.log({"loss": 1.0}, 0)
    caplog.set_level(logging.INFO, logger="trainer.training.sync")
    # Ctrl-C as the terminal sends it: KeyboardInterrupt in the main thread, mid-drain.
    with CtrlCWhenIn("drain"):
        run.close()
    messages = [r.getMessage() for r in caplog.records if r.name == "trainer.training.sync"]
    assert any("Ctrl-C skips" in m for m in messages), messages
    assert any("Ctrl-C: no longer waiting for downhook.save" in m for m in messages), messages
    assert "were not transferred by downhook.save: " in messages[-1], messages
    assert str(root / "run" / "pickle") in messages[-1] and "trainer sync" not in messages[-1]
    assert run.transfer is not None and run.transfer.unsent


def test_an_unwritable_store_fails_at_open_naming_it(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=str(blocker)):
        MonitorRun(blocker / "pickle", tmp_path)


@pytest.mark.integration
def test_a_second_process_writing_the_same_store_is_refused_naming_the_first(tmp_path):
    store = tmp_path / "run" / "pickle"
    code = (
        "import sys; from pathlib import Path; from integrations._run import MonitorRun; "
        f"run = MonitorRun(Path({str(store)!r}), Path({str(tmp_path)!r})); "
        "run.log({'loss': 1.0}, 0); print('held', flush=True); sys.stdin.read(); run.close()"
    )
    first = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    try:
        assert first.stdout is not None and first.stdout.readline() == "held\n"
        with pytest.raises(RunLockError) as refused:
            MonitorRun(store, tmp_path)
    finally:
        first.communicate(timeout=60)  # its stdin closes: the first run ends
    message = str(refused.value)
    assert f"{store} is being written by another writer, PID {first.pid} on this host" in message
    assert message.endswith("or log this run to another directory") and "\n" not in message
    run = MonitorRun(store, tmp_path)  # free again once the first closed
    run.log({"loss": 0.5}, 1)
    run.close()
    history, meta, status = read(store)
    assert history.series(("", "loss"))[3] == [1.0, 0.5] and status["state"] == "finished"
    assert len(meta["sessions"]) == 2  # the refused writer wrote nothing
