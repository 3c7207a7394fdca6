"""A full disk while training, on a real small filesystem (a tmpfs) under the real ``trainer`` CLI.

The run stops with one line naming the checkpoint, the space it needs and what
was kept (exit 1), the last good checkpoint loads, the store reads, and
``--continue-train`` resumes; or, with ``--on-disk-full continue``, training
goes on without checkpoints and says so once.
"""

from __future__ import annotations

import errno
import re

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.ranks import start_ranks
from tests.fixtures.runs.training import (
    read_run,
    run,
    start,
    train_args,
    trainer_cmd,
    wait_for_file,
)
from tests.fixtures.servers.disk import fill
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import reap
from trainer.training import checkpoint
from trainer.training.disk_full import out_of_space


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("trainer train: error:")]


def train_into_a_filling_disk(disk, name: str, *args: str) -> tuple[int, str]:
    """Train on ``disk``, fill it once the first checkpoint is there; exit status and stderr."""
    proc = start(trainer_cmd("train", *args), cwd=disk.parent)
    try:
        wait_for_file(disk / name, "latest.pth", proc)
        fill(disk)  # loss_log.txt, the store and the checkpoints all meet a full disk
        _, stderr = proc.communicate(timeout=300)
    finally:
        reap(proc)
    return proc.returncode, stderr


def test_a_full_disk_stops_cleanly_keeping_the_last_good_checkpoint(tiny_dataset, small_disk):
    run_dir = small_disk / "full"
    args = train_args(tiny_dataset, small_disk, "full", "--save-epoch-freq", "0")
    status, stderr = train_into_a_filling_disk(small_disk, "full", *args, "--num-epochs", "500")
    assert status == ExitCode.FAILED, stderr[-3000:]
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
    [line] = error_lines(stderr)
    assert f"no space left for checkpoint {run_dir}/" in line, line
    # The space the checkpoint needs and what is free.
    assert re.search(r"it needs [\d.]+ [kM]B, [\d.]+ [kM]B free there", line), line
    assert f"the last good checkpoint {run_dir / 'latest.pth'} is kept" in line, line
    kept = checkpoint.load(run_dir / "latest.pth")
    assert kept["epoch"] >= 1
    assert not list(run_dir.glob(".*.tmp")), "the failed write's temporary file is left"

    (small_disk / "ballast").unlink()
    history, _, status = read_run(run_dir)
    assert status["state"] == "failed"
    steps, _ = history.series(("train", "loss"))[:2]
    assert len(steps) and max(steps) >= kept["step"]

    resumed = run(
        trainer_cmd("train", *args, "--num-epochs", str(kept["epoch"] + 1), "--continue-train"),
        cwd=small_disk.parent,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from {run_dir / 'latest.pth'} at epoch {kept['epoch']}" in resumed.stderr
    assert checkpoint.load(run_dir / "latest.pth")["epoch"] == kept["epoch"] + 1


def test_no_room_for_the_first_checkpoint_says_there_is_nothing_to_resume(tiny_dataset, small_disk):
    fill(small_disk, leave=128 * 1024)  # room for the store, not for a 313 kB checkpoint
    args = train_args(tiny_dataset, small_disk, "first", "--num-epochs", "2")
    done = run(trainer_cmd("train", *args), cwd=small_disk.parent)
    assert done.returncode == ExitCode.FAILED, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    [line] = error_lines(done.stderr)
    assert "no checkpoint was written yet, so there is nothing to resume" in line, line
    _, _, status = read_run(small_disk / "first")
    assert status["state"] == "failed"


def test_on_disk_full_continue_trains_on_without_checkpoints_and_says_so_once(
    tiny_dataset, small_disk
):
    fill(small_disk, leave=128 * 1024)
    args = train_args(tiny_dataset, small_disk, "goes-on", "--num-epochs", "3")
    done = run(trainer_cmd("train", *args, "--on-disk-full", "continue"), cwd=small_disk.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.count("Training goes on without checkpoints") == 1, done.stderr[-3000:]
    assert "done: 3 epochs" in done.stderr
    history, _, status = read_run(small_disk / "goes-on")
    assert status["state"] == "finished"
    assert status["checkpoints_skipped"] >= 3  # latest.pth of each epoch (best.pth too)
    assert not (small_disk / "goes-on" / "latest.pth").exists()


def test_a_bad_on_disk_full_value_is_refused_before_training(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "bad")
    done = run(trainer_cmd("train", *args, "--on-disk-full", "ignore"), cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert "--on-disk-full: invalid choice: 'ignore'" in done.stderr, done.stderr
    assert not (tmp_path / "bad").exists()


def test_out_of_space_finds_enospc_behind_torch_saves_runtime_error():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            raise RuntimeError("unexpected pos")  # noqa: B904 - as torch.save raises it
    except RuntimeError as err:
        assert out_of_space(err)
    assert out_of_space(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not out_of_space(PermissionError(errno.EACCES, "Permission denied"))
    assert not out_of_space(RuntimeError("unexpected pos"))


def test_a_disk_that_fills_mid_run_under_continue_gives_no_traceback(tiny_dataset, small_disk):
    run_dir = small_disk / "fills"
    args = train_args(tiny_dataset, small_disk, "fills", "--on-disk-full", "continue")
    status, stderr = train_into_a_filling_disk(small_disk, "fills", *args, "--num-epochs", "40")
    assert status == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
    assert stderr.count("Training goes on without checkpoints") == 1, stderr[-3000:]
    assert stderr.count(f"can not write {run_dir / 'loss_log.txt'}") <= 1
    assert "done: 40 epochs" in stderr
    assert checkpoint.load(run_dir / "latest.pth")["epoch"] >= 1  # the last good one, whole


@pytest.mark.parametrize("mode", ["stop", "continue"])
def test_every_rank_of_a_ddp_job_stops_or_goes_on_together(tiny_dataset, small_disk, mode):
    fill(small_disk, leave=128 * 1024)
    port = str(free_port())
    args = train_args(tiny_dataset, small_disk, "ddp", "--batch-size", "8", "--n-epochs", "2")
    ranks = [
        {"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        for r in range(2)
    ]
    cmd = trainer_cmd("train", *args, "--on-disk-full", mode)
    procs = start_ranks(cmd, small_disk.parent, ranks)
    outputs = []
    try:
        outputs = [proc.communicate(timeout=180)[0] for proc in procs]
    finally:
        for proc in procs:
            reap(proc)
    assert not any("Traceback" in out for out in outputs), outputs
    if mode == "continue":
        assert [proc.returncode for proc in procs] == [0, 0], outputs
        assert outputs[0].count("Training goes on without checkpoints") == 1, outputs[0]
        assert "done: 2 epochs" in outputs[0]
        return
    assert [proc.returncode for proc in procs] == [ExitCode.FAILED] * 2, outputs
    assert "nothing to resume" in error_lines(outputs[0])[0]
    assert error_lines(outputs[1]) == [
        f"trainer train: error: rank 0 could not write {small_disk / 'ddp' / 'latest.pth'} "
        "(disk full); stopping"
    ]


def test_fit_raises_disk_full_error_or_goes_on_as_asked(small_disk):
    import torch
    from torch import nn
    from torch.utils.data import TensorDataset

    import trainer

    fill(small_disk, leave=128 * 1024)
    data = TensorDataset(torch.rand(64, 256), torch.rand(64, 256))
    model = nn.Linear(256, 256)  # 0.26 MB of weights, twice that again in Adam's moments
    optimizer = torch.optim.Adam(model.parameters())
    kwargs = {"checkpoints_dir": str(small_disk), "remote": True, "num_epochs": 2, "ddp": False}
    with pytest.raises(trainer.DiskFullError, match="nothing to resume"):
        trainer.fit(
            model, nn.MSELoss(), optimizer, {"train": data, "valid": data}, name="stops", **kwargs
        )
    result = trainer.fit(
        model, nn.MSELoss(), optimizer, {"train": data, "valid": data}, name="goes-on", on_disk_full="continue",
        **kwargs,
    )  # fmt: skip
    assert result.epochs_completed == 2 and result.latest_checkpoint is None
