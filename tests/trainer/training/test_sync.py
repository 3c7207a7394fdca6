"""python -m trainer sync: send a whole run through a hook, idempotently."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.runs.training import clean_env, train_args, trainer_cmd
from tests.fixtures.servers.waiting import EXIT_WAIT_S, CtrlCWhenIn
from trainer.training.sync import send_remaining
from transfer_plugins.runner import TransferRunner

# Every test runs `python -m trainer sync` as a process.
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]

HOOK = """
    import os, shutil
    from pathlib import Path

    def mirror(source_path, relative_path):
        target = Path(os.environ["MIRROR_DIR"]) / relative_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)
"""


def _sync(cwd: Path, *args: str, mirror: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trainer", "sync", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MIRROR_DIR": str(mirror), "PYTHONPATH": str(REPO)},
    )


def _tree(root: Path) -> dict[str, bytes]:
    """A run's files as sync sends them: hidden ones (the store's writer lock) stay behind."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


def test_sync_sends_every_file_of_a_run_and_is_idempotent(tmp_path):
    (tmp_path / "mirrorhook.py").write_text(textwrap.dedent(HOOK))
    run = tmp_path / "checkpoints" / "exp"
    with Recorder(run / "pickle", rank=0) as rec:
        rec.log({"loss": 1.0}, step=0)
    (run / "latest.pth").write_bytes(b"weights")
    mirror = tmp_path / "mirror"
    for _ in range(2):
        proc = _sync(
            tmp_path, str(run), "--remote-transfer-cmd", "mirrorhook.mirror", mirror=mirror
        )
        assert proc.returncode == 0, proc.stderr
    assert _tree(mirror / "exp") == _tree(run)
    assert "sent 4 of 4 files" in proc.stderr


def test_sync_bad_input_is_one_clear_error(tmp_path):
    mirror = tmp_path / "mirror"
    proc = _sync(tmp_path, str(tmp_path / "nope"), "--remote-transfer-cmd", "x.y", mirror=mirror)
    assert (
        proc.returncode == 2 and "run directory" in proc.stderr and "does not exist" in proc.stderr
    )
    (tmp_path / "run").mkdir()
    proc = _sync(
        tmp_path, str(tmp_path / "run"), "--remote-transfer-cmd", "nosuch.hook", mirror=mirror
    )
    assert proc.returncode == 2 and "no module 'nosuch' found" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- files left unsent: said, listed with the command, non-zero exit -----------------------------

FAILING_HOOK = """
    def save(source_path):
        raise ConnectionError("destination down")
"""


def test_sync_with_files_left_unsent_exits_upload_incomplete_with_the_command(tmp_path):
    (tmp_path / "downhook.py").write_text(textwrap.dedent(FAILING_HOOK))
    run = tmp_path / "checkpoints" / "exp"
    run.mkdir(parents=True)
    (run / "latest.pth").write_bytes(b"weights")
    proc = _sync(
        tmp_path,
        str(run),
        "--remote-transfer-cmd",
        "downhook.save",
        "--timeout",
        "1",
        mirror=tmp_path / "mirror",
    )
    assert proc.returncode == ExitCode.UPLOAD_INCOMPLETE == 5, proc.stderr
    assert "ConnectionError: destination down" in proc.stderr
    assert f"run: python -m trainer sync {run} --remote-transfer-cmd downhook.save" in proc.stderr


def test_the_log_sent_last_is_whole_though_an_outage_made_the_drain_log_into_it(
    tmp_path, monkeypatch, caplog
):
    """A destination down at the close: the drain's progress lines go into loss_log.txt
    while it waits, and the copy it leaves at the destination still has all of them."""
    from trainer.training import sync

    monkeypatch.setattr(sync, "PROGRESS_EVERY_S", 0.05)
    run, sent = tmp_path / "exp", tmp_path / "sent"
    run.mkdir()
    log_file = run / "loss_log.txt"
    log_file.write_text("epoch 1\n")
    checkpoint = run / "latest.pth"
    checkpoint.write_bytes(b"weights")
    checkpoint_failures = iter(range(6))

    def flaky(path, relative):
        data = Path(path).read_bytes()
        if Path(path) == checkpoint and next(checkpoint_failures, None) is not None:
            raise ConnectionError("destination down")
        if Path(path) == log_file:
            time.sleep(0.5)  # a slow upload: progress lines are written after the bytes were read
        (sent / relative).parent.mkdir(parents=True, exist_ok=True)
        (sent / relative).write_bytes(data)

    to_file = logging.FileHandler(log_file)
    logger = logging.getLogger("trainer")
    logger.addHandler(to_file)
    caplog.set_level("INFO", logger="trainer")
    try:
        runner = TransferRunner(flaky, tmp_path, backoff=(0.05, 0.2), name="flaky.save")
        runner.submit(checkpoint)
        assert send_remaining(runner, run, timeout=60, log_file=log_file) == []
    finally:
        logger.removeHandler(to_file)
        to_file.close()
    lines = log_file.read_text().splitlines()
    assert any("still sending through flaky.save" in line for line in lines), lines
    assert (sent / "exp" / "loss_log.txt").read_text().splitlines() == lines


def test_ctrl_c_skips_the_drain_and_leaves_the_list_and_the_command(tmp_path, caplog):
    def down(path):
        raise ConnectionError("destination down")

    run = tmp_path / "exp"
    run.mkdir()
    files = [run / "latest.pth", run / "loss_log.txt"]
    for f in files:
        f.write_text("x")
    runner = TransferRunner(down, tmp_path, name="downhook.save")
    for f in files:
        runner.submit(f)
    caplog.set_level("INFO", logger="trainer.training.sync")
    # Ctrl-C as the terminal sends it: KeyboardInterrupt in the main thread, mid-drain.
    with CtrlCWhenIn("drain"):
        left = send_remaining(runner, run, timeout=600)
    assert left == files == runner.unsent
    messages = [r.getMessage() for r in caplog.records]
    assert any("2 file(s)" in m and "Ctrl-C skips" in m for m in messages), messages
    assert any("Ctrl-C: no longer waiting for downhook.save" in m for m in messages), messages
    assert (
        f"{files[0]}, {files[1]}. Once the destination is reachable, run: "
        f"python -m trainer sync {run} --remote-transfer-cmd downhook.save" in messages[-1]
    )


def test_a_hook_failing_on_every_file_is_said_during_training_and_the_run_exits_5(
    tmp_path, tiny_dataset
):
    """A real training run: the warning comes before training ends; Ctrl-C skips the drain."""
    (tmp_path / "downhook.py").write_text(textwrap.dedent(FAILING_HOOK))
    checkpoints = tmp_path / "checkpoints"
    out = tmp_path / "train.out"
    args = train_args(
        tiny_dataset,
        checkpoints,
        "exp",
        "--n-epochs",
        "2",
        "--remote-transfer-cmd",
        "downhook.save",
    )
    with out.open("w") as sink:
        proc = subprocess.Popen(
            trainer_cmd("train", *args),
            cwd=tmp_path,
            env=clean_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "before exiting" not in out.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(EXIT_WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = out.read_text().splitlines()
    text = "\n".join(lines)
    warned = next(i for i, line in enumerate(lines) if "transfer downhook.save failed for" in line)
    last_epoch = max(i for i, line in enumerate(lines) if "epoch 2 validation" in line)
    assert warned < last_epoch, text  # said while training, not at exit
    assert "ConnectionError: destination down" in lines[warned]
    assert sum("failed for" in line for line in lines) == 1, text  # one warning, not one per file
    assert "Ctrl-C: no longer waiting" in text
    run = checkpoints / "exp"
    assert f"run: python -m trainer sync {run} --remote-transfer-cmd downhook.save" in text
    assert str(run / "latest.pth") in text
    assert code == ExitCode.UPLOAD_INCOMPLETE, text
    assert "Traceback" not in text
