"""trainer.interrupts: SIGTERM during a run closes it and exits 143; nothing stays installed."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from snapshot_store import ExitCode
from tests.trainer.helpers import clean_env, read_run, train_args, trainer_cmd
from trainer.interrupts import Terminated, terminate_as_exit


def test_sigterm_inside_the_block_unwinds_and_the_old_handler_comes_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as stopped, terminate_as_exit():
        signal.raise_signal(signal.SIGTERM)
    assert stopped.value.code == ExitCode.TERMINATED
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.integration
def test_sigterm_during_training_marks_the_run_failed_and_exits_143(tiny_dataset, tmp_path):
    proc = subprocess.Popen(
        trainer_cmd(
            "train",
            *train_args(tiny_dataset, tmp_path, "term", "--batch-size", "4", "--num-epochs", "200"),
        ),
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list((tmp_path / "term").glob("epoch_*.pth")) and time.monotonic() < deadline:
        time.sleep(0.2)  # a few epochs in
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.TERMINATED, err[-2000:]
    assert "Traceback" not in err and err.strip().endswith("trainer train: terminated")
    history, meta, status = read_run(tmp_path / "term")
    assert status["state"] == "failed" and history.series(("train", "loss"))[0]
