"""Training-side faults, end to end: real torchrun jobs of 2 CPU ranks (gloo) on the tiny dataset.

* rank 1 SIGKILLed mid-epoch: rank 0's store ends ``failed``, a visualizer following
  it sends one ``failed`` alert, and ``--continue-train`` resumes from the last checkpoint;
* SIGTERM to the torchrun process: the run ends ``stopped``;
* the disk fills in the middle of a checkpoint: the previous checkpoint is kept whole
  and the job ends with one clear line;
* a second job on the same ``--checkpoints-dir`` and ``--name`` while the first trains
  is refused before training with one clear line, and the first goes on unharmed.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.training import (
    LONG,
    job,
    read_run,
    series,
    torchrun_cmd,
    train_args,
    trainer_cmd,
    wait_for_file,
)
from tests.fixtures.servers.alerting import TIMEOUT, Receiver, stop, visualizer
from tests.fixtures.servers.disk import fill
from tests.fixtures.servers.processes import first_line
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.alerts.test_rules import sent_keys
from trainer.command.data import make_dataset
from trainer.training import checkpoint

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 180  # seconds: a bound for a job to end, not a target
STEPS_PER_EPOCH = 6  # 48 training images, 2 ranks of batch 4
TWO_RANKS = ("--standalone", "--nproc_per_node", "2")
# Still training however long a second job takes to be refused (LONG ends in under a minute).
ENDLESS = ("--batch-size", "4", "--num-epochs", "100000")

# `trainer train`, but rank 1 SIGKILLs itself just before step 9 (mid epoch 2, after the
# epoch-1 checkpoint) once the file named first exists: the test's side of the code, so
# the kill falls mid-epoch every time and after the visualizer has seen the run running.
KILLED_RANK_1 = """
import os, signal, sys, time
from pathlib import Path
from trainer.command import cli
from trainer.training import loop

go, argv = Path(sys.argv[1]), sys.argv[2:]
run_batch = loop.Trainer._run_batch

def killed_before_step_9(self, inputs, targets):
    if os.environ["RANK"] == "1" and self.state.step + 1 == 9:
        deadline = time.monotonic() + 120
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ["RANK"] == "0" and self.state.step + 1 == 9 and os.environ.get("RANK_0_WAITS"):
        time.sleep(120)  # in no collective: torchrun's SIGTERM comes before any gloo error
    return run_batch(self, inputs, targets)

loop.Trainer._run_batch = killed_before_step_9
sys.exit(cli.main(["train", *argv]))
"""


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trainer tests' 3 classes of 16 training images: 6 steps an epoch on 2 ranks."""
    root = tmp_path_factory.mktemp("tiny_dataset")
    make_dataset(root, classes=3, train_per_class=16, val_per_class=4, image_size=16, seed=1)
    return root


def ended(proc: subprocess.Popen[str]) -> str:
    """``proc``'s stderr, once it exited (at most :data:`JOB_TIMEOUT` seconds)."""
    return proc.communicate(timeout=JOB_TIMEOUT)[1]


def error_lines(stderr: str, command: str = "train") -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"trainer {command}: error:")]


# --- rank 1 killed ------------------------------------------------------------------------


@pytest.mark.timeout(300)
def test_a_killed_rank_fails_the_run_alerts_once_and_continue_train_resumes(
    tiny_dataset,
    tmp_path,
    visdom_server,
    receiver: Receiver,
):
    checkpoints, run_dir = tmp_path / "checkpoints", tmp_path / "checkpoints" / "k"
    state, log, go = tmp_path / "state", tmp_path / "visualizer.log", tmp_path / "go"
    script = tmp_path / "killed_rank_1.py"
    script.write_text(KILLED_RANK_1)
    args = train_args(tiny_dataset, checkpoints, "k", "--batch-size", "4")
    follower = None
    try:
        killed = torchrun_cmd(*TWO_RANKS, str(script), str(go), *args, "--num-epochs", "200")
        with job(killed, tmp_path) as proc:
            wait_for_file(run_dir, "pickle/status.pickle", proc)
            follower = visualizer(checkpoints, visdom_server.endpoint, state, log,
                                  "--alert-webhook", receiver.url)  # fmt: skip
            assert first_line(follower, log, TIMEOUT).startswith("visdom: ")
            wait_until(lambda: sent_keys(state, "k") is not None, TIMEOUT)  # seen running
            go.touch()
            err = ended(proc)
        assert proc.returncode != 0, err[-3000:]
        assert "exitcode  : -9" in err, err[-3000:]  # torchrun names rank 1's SIGKILL
        _, _, status = read_run(run_dir)
        assert status["state"] == "failed", (status, err[-3000:])
        # Closed, not abandoned: the store's reserve is freed and the lock names no writer.
        assert not (run_dir / "pickle" / ".status-reserve").exists()
        assert (run_dir / "pickle" / ".writer.lock").read_bytes() == b""
        kept = checkpoint.load(run_dir / "latest.pth")
        assert (kept["epoch"], kept["step"]) == (1, STEPS_PER_EPOCH)
        wait_until(lambda: receiver.of("k"), 30)

        resumed = [*args, "--num-epochs", "2", "--continue-train"]
        with job(torchrun_cmd(*TWO_RANKS, "-m", "trainer", "train", *resumed), tmp_path) as proc:
            err = ended(proc)
        assert proc.returncode == 0, err[-3000:]
        assert f"resumed from {run_dir / 'latest.pth'} at epoch 1" in err, err[-3000:]
        # The resumed session's end is the next alert: a second `failed` would come before it.
        wait_until(lambda: len(receiver.of("k")) >= 2, 30)
    finally:
        if follower is not None:
            stop(follower, log)
    assert [alert["event"] for _, alert in receiver.of("k")] == ["failed", "finished"]
    history, meta, status = read_run(run_dir)
    assert status["state"] == "finished" and len(meta["sessions"]) == 2
    assert series(history, "train/loss")[0] == list(range(1, 2 * STEPS_PER_EPOCH + 1))
    assert checkpoint.load(run_dir / "latest.pth")["epoch"] == 2


def test_a_killed_rank_fails_the_run_though_torchruns_sigterm_reaches_rank_0_first(
    tiny_dataset, tmp_path
):
    """Rank 0 is in no collective when rank 1 dies: the first it hears is torchrun's SIGTERM,
    the one a scheduler's stop sends too. Rank 1 never got it, so the run failed."""
    checkpoints, run_dir, go = (
        tmp_path / "checkpoints",
        tmp_path / "checkpoints" / "w",
        tmp_path / "go",
    )
    script = tmp_path / "killed_rank_1.py"
    script.write_text(KILLED_RANK_1)
    go.touch()
    args = train_args(tiny_dataset, checkpoints, "w", "--batch-size", "4", "--num-epochs", "200")
    cmd = torchrun_cmd(*TWO_RANKS, str(script), str(go), *args)
    with job(cmd, tmp_path, RANK_0_WAITS="1") as proc:
        err = ended(proc)
    assert "exitcode  : -9" in err, err[-3000:]
    _, _, status = read_run(run_dir)
    assert status["state"] == "failed", (status, err[-3000:])
    assert "trainer train: error: a rank of the 2 stopped without a stop signal" in err, err[-3000:]
    assert "trainer train: terminated" not in err, err[-3000:]


# --- SIGTERM to torchrun ------------------------------------------------------------------


def test_sigterm_to_torchrun_stops_the_run(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "term", *LONG)
    with job(torchrun_cmd(*TWO_RANKS, "-m", "trainer", "train", *args), tmp_path) as proc:
        wait_for_file(tmp_path / "term", "latest.pth", proc)
        proc.send_signal(signal.SIGTERM)  # torchrun alone; it passes the signal on
        err = ended(proc)
    assert proc.returncode != 0, err[-3000:]
    assert "trainer train: terminated" in err, err[-3000:]
    history, meta, status = read_run(tmp_path / "term")
    assert status["state"] == "stopped" and meta["world_size"] == 2, status
    assert series(history, "train/loss")[0]


# --- a disk that fills mid-checkpoint -----------------------------------------------------


def test_a_disk_filling_mid_checkpoint_keeps_the_previous_one_and_says_so_once(
    tiny_dataset,
    small_disk,
):
    run_dir = small_disk / "full"
    args = train_args(tiny_dataset, small_disk, "full", *LONG)
    launch = trainer_cmd("launch", "--nproc-per-node", "2", *args)
    with job(launch, small_disk.parent) as proc:
        wait_for_file(run_dir, "latest.pth", proc)
        # Room left for a part of the next checkpoint (330 kB), not all of it: its write
        # starts and meets the full disk midway.
        fill(small_disk, leave=128 * 1024)
        err = ended(proc)
    assert proc.returncode == ExitCode.FAILED, err[-3000:]
    assert "Traceback" not in err and "Logging error" not in err, err[-3000:]
    [line] = [line for line in error_lines(err) if "disk full:" in line]  # rank 0 says why
    failed = re.search(
        rf"no space left for checkpoint ({re.escape(str(run_dir))}/\S+\.pth): ", line
    )
    assert failed, line
    assert f"the last good checkpoint {run_dir / 'latest.pth'} is kept" in line, line
    assert sorted(error_lines(err)) == sorted(  # and rank 1 what stopped it, in either order
        [line, f"trainer train: error: rank 0 could not write {failed[1]} (disk full); stopping"]
    ), err[-3000:]
    last = err.strip().splitlines()[-1]  # the launcher's: no torchrun traceback
    assert re.fullmatch(r"trainer launch: worker rank \d \(pid \d+\) exited with status 1", last)
    kept = checkpoint.load(run_dir / "latest.pth")  # whole: it loads
    assert kept["epoch"] >= 1 and kept["world_size"] == 2
    assert not list(run_dir.glob(".*.tmp")), "the failed write's temporary file is left"
    (small_disk / "ballast").unlink()
    history, _, status = read_run(run_dir)
    assert status["state"] == "failed"
    assert max(series(history, "train/loss")[0]) >= kept["step"]


# --- two trainers on one name -------------------------------------------------------------


@pytest.mark.parametrize("second", ["torchrun", "launch"])
def test_a_second_job_on_a_running_name_is_refused_before_training(
    tiny_dataset,
    tmp_path,
    second,
):
    run_dir = tmp_path / "one"
    args = train_args(tiny_dataset, tmp_path, "one", *ENDLESS)
    again = {
        "torchrun": torchrun_cmd(*TWO_RANKS, "-m", "trainer", "train", *args),
        "launch": trainer_cmd("launch", "--nproc-per-node", "2", *args),
    }[second]
    with job(torchrun_cmd(*TWO_RANKS, "-m", "trainer", "train", *args), tmp_path) as first:
        wait_for_file(run_dir, "latest.pth", first)
        with job(again, tmp_path) as proc:
            # Under torchrun its rank 0 refuses at once; its rank 1, waiting in the rendezvous
            # for it, ends only when torchrun's SIGKILL follows the SIGTERM 30 s later.
            err = ended(proc)
        assert first.poll() is None, "the first job ended"
        first.send_signal(signal.SIGTERM)
        ended(first)
    assert proc.returncode != 0, err[-3000:]
    [line] = error_lines(err, "train" if second == "torchrun" else "launch")
    assert f"{run_dir / 'pickle'} is being written by another writer, PID " in line, line
    assert "choose another --name" in line, line
    assert " (epoch " not in err, err[-3000:]  # not one step trained
    history, meta, status = read_run(run_dir)
    assert len(meta["sessions"]) == 1 and status["state"] == "stopped"
    steps, _ = series(history, "train/loss")
    assert steps == list(range(1, len(steps) + 1))  # one run's curve, nothing interleaved
