"""trainer.training.checks: one writer per run dir, a reused run name, and the transfer hook and its
destination, all before training."""

from __future__ import annotations

import os
import time

import pytest

from run_core.exit_codes import ExitCode
from run_core.launch_env import LaunchEnv
from run_core.run_lock import RunLock
from tests.fixtures.training import train_args
from trainer.command import cli
from trainer.training.checks import preflight
from trainer.training.config import RunConfig, UsageError


def _config(tmp_path, **options) -> RunConfig:
    return RunConfig.from_options({"checkpoints_dir": tmp_path, "name": "run", **options})


def _old_run(config: RunConfig, checkpoint: bool) -> None:
    config.store_dir.mkdir(parents=True)
    (config.store_dir / "meta.pickle").write_bytes(b"x")
    if checkpoint:
        (config.run_dir / "latest.pth").write_bytes(b"x")


def test_reusing_a_name_is_refused_with_both_choices(tmp_path):
    config = _config(tmp_path)
    _old_run(config, checkpoint=True)

    with pytest.raises(UsageError) as refused:
        preflight(config, LaunchEnv())
    message = str(refused.value)
    assert "--name run" in message and str(config.run_dir) in message
    assert "--continue-train to resume" in message and "choose a new --name" in message


def test_reusing_a_name_without_a_checkpoint_says_there_is_nothing_to_resume(tmp_path):
    config = _config(tmp_path)
    _old_run(config, checkpoint=False)

    with pytest.raises(UsageError, match="no latest.pth to resume from.*choose a new --name"):
        preflight(config, LaunchEnv())


def test_continuing_a_run_or_an_elastic_restart_is_not_a_reuse(tmp_path):
    _old_run(_config(tmp_path), checkpoint=True)

    preflight(_config(tmp_path, continue_train=True), LaunchEnv())
    preflight(_config(tmp_path), LaunchEnv(restart_count=1))


def test_an_empty_run_dir_and_a_run_that_records_nothing_are_free(tmp_path):
    config = _config(tmp_path)
    config.run_dir.mkdir()
    preflight(config, LaunchEnv())  # a run dir left by a run refused before it wrote anything
    _old_run(config, checkpoint=False)
    preflight(_config(tmp_path, record=False), LaunchEnv())


def test_a_run_dir_another_writer_holds_is_refused_naming_it(tmp_path):
    config = _config(tmp_path)
    with RunLock(config.run_dir):
        with pytest.raises(UsageError, match=f"another trainer, PID {os.getpid()} on this host"):
            preflight(config, LaunchEnv())
        preflight(config, LaunchEnv(rank=1, world_size=2))  # only rank 0 writes, and checks


PASSWORD = "PW-canary-7f3a"


@pytest.mark.timeout(120)
def test_an_endpoint_that_never_answers_is_one_error_before_training(
    silent_server, tiny_dataset, tmp_path, monkeypatch, capsys
):
    endpoint = silent_server.replace("http://", f"http://alice:{PASSWORD}@")
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "AKIDSILENT",
        "AWS_SECRET_ACCESS_KEY": "silent-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "TRANSFER_S3_URI": "s3://bucket/runs",
    }.items():
        monkeypatch.setenv(name, value)
    checkpoints = tmp_path / "checkpoints"
    args = train_args(
        tiny_dataset, checkpoints, "exp", "--remote-transfer-cmd", "transfer_plugins.s3.save_to_s3"
    )
    started = time.monotonic()

    code = cli.main(["train", *args])

    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == ExitCode.USAGE, err
    assert len(lines) == 1 and lines[0].startswith("trainer train: error: transfer check failed")
    assert "sent no answer within 4 s" in lines[0] and "AWS_ENDPOINT_URL" in lines[0]
    assert "silent-secret-key" not in err
    assert not list(checkpoints.rglob("*.pth")) and not (checkpoints / "exp" / "pickle").exists()
    assert elapsed < 15 + 30, elapsed  # 15 s for the check, the rest for imports on a busy machine
    assert PASSWORD not in err
