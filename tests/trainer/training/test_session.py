"""trainer.training.session: rank 0 holds the run dir for the run, and stores options without secrets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

import trainer
from run_core.exit_codes import ExitCode
from run_core.launch_env import LaunchEnv
from run_core.run_lock import RunLock, RunLockError
from tests.fixtures.runs.training import run, start, train_args, trainer_cmd, wait_for_file
from tests.fixtures.servers.net import free_port
from trainer.ranks.distributed import Devices
from trainer.training.config import RunConfig
from trainer.training.session import RunSession


def _every_byte(*roots: Path) -> bytes:
    """The contents of every file under ``roots``, hidden ones included."""
    return b"".join(
        p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    )


def test_a_session_refuses_a_run_dir_another_writer_holds(tmp_path):
    config = RunConfig.from_options({"checkpoints_dir": tmp_path, "name": "run", "remote": True})
    session = RunSession(config, LaunchEnv(), Devices(torch.device("cpu")), {})
    with RunLock(config.store_dir), pytest.raises(RunLockError, match=f"PID {os.getpid()}"):
        session.__enter__()
    assert not (config.run_dir / "loss_log.txt").exists()  # refused before writing anything


@pytest.mark.integration
def test_secrets_in_options_reach_no_file_copy_or_output(tmp_path, monkeypatch, capfd):
    """Canaries in the options (a key, a URL login, a query token): stored and sent redacted.

    (A login in --display-server or a query in --display-env is refused before anything is
    written: tests/trainer/training/test_config.py.)"""
    canaries = ["CANARY-api-key-1f3", "CANARY-visdom-pw-9c2", "CANARY-env-token-77d"]
    copies = tmp_path / "copies"
    copies.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(copies))
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x = torch.rand(64, 4)
    result = trainer.fit(
        model,
        nn.MSELoss(),
        torch.optim.SGD(model.parameters(), lr=0.1),
        {"train": TensorDataset(x, x.sum(1, keepdim=True)), "valid": TensorDataset(x, x[:, :1])},
        batch_size=16,
        num_epochs=2,
        checkpoints_dir=tmp_path / "checkpoints",
        remote=True,
        remote_transfer_cmd="transfer_plugins.local.copy_to",
        options={
            "api_key": canaries[0],
            "nested": {"url": f"https://u:{canaries[1]}@h/x", "query": f"?token={canaries[2]}"},
        },
    )
    output = capfd.readouterr()
    stored = _every_byte(result.run_dir, copies)
    assert result.best_checkpoint and (copies / "experiment" / "best.pth").is_file()
    assert b"latest.pth" in b"".join(p.name.encode() for p in copies.rglob("*"))
    for canary in canaries:
        assert canary.encode() not in stored, canary
        assert canary not in output.out + output.err, canary
    options = trainer.training.checkpoint.load(result.best_checkpoint)["options"]
    assert options["api_key"] == "***" and options["nested"]["url"] == "https://u:***@h/x"


@pytest.mark.integration
def test_a_password_in_aws_endpoint_url_is_not_echoed_by_the_preflight_error(
    tiny_dataset, tmp_path
):
    canary = "CANARY-s3-pw-41a"
    result = run(
        trainer_cmd(
            "train",
            *train_args(tiny_dataset, tmp_path, "s3", "--num-epochs", "1"),
            "--remote-transfer-cmd",
            "transfer_plugins.s3.save_to_s3",
        ),
        cwd=tmp_path,
        AWS_ENDPOINT_URL=f"http://user:{canary}@127.0.0.1:{free_port()}",  # nothing listens
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test-secret-key",
        TRANSFER_S3_URI="s3://bucket/runs",
    )
    assert result.returncode == ExitCode.USAGE, result.stderr[-2000:]
    assert "transfer check failed" in result.stderr and "http://user:***@127.0.0.1" in result.stderr
    assert canary not in result.stdout + result.stderr
    assert canary.encode() not in _every_byte(tmp_path / "s3")
    assert not (tmp_path / "s3" / "pickle").exists()  # before training


@pytest.mark.integration
def test_a_second_trainer_on_a_running_run_fails_at_once_naming_the_first(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "one", "--batch-size", "4", "--num-epochs", "200")
    first = start(trainer_cmd("train", *args), tmp_path)
    try:
        wait_for_file(tmp_path / "one", "latest.pth", first)
        log_before = (tmp_path / "one" / "loss_log.txt").stat().st_size
        second = run(trainer_cmd("train", *args, "--continue-train"), cwd=tmp_path)
        assert second.returncode == ExitCode.USAGE, second.stderr[-2000:]
        assert f"another writer, PID {first.pid} on this host" in second.stderr
        assert "Traceback" not in second.stderr and first.poll() is None
        assert (tmp_path / "one" / "loss_log.txt").stat().st_size >= log_before
    finally:
        first.terminate()
        _, err = first.communicate(timeout=60)
    assert first.returncode == ExitCode.TERMINATED, err[-2000:]


@pytest.mark.integration
def test_reusing_a_finished_runs_name_is_refused_before_training(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "again", "--num-epochs", "1")
    assert run(trainer_cmd("train", *args), cwd=tmp_path).returncode == ExitCode.OK
    segments = sorted(p.name for p in (tmp_path / "again" / "pickle").iterdir())

    again = run(trainer_cmd("train", *args), cwd=tmp_path)

    assert again.returncode == ExitCode.USAGE
    assert "--continue-train to resume" in again.stderr and "new --name" in again.stderr
    assert sorted(p.name for p in (tmp_path / "again" / "pickle").iterdir()) == segments
    resumed = run(
        trainer_cmd("train", *args, "--continue-train", "--num-epochs", "2"), cwd=tmp_path
    )
    assert resumed.returncode == ExitCode.OK, resumed.stderr[-2000:]
