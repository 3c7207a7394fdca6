"""trainer.checks: one writer per run dir, and a run name reused without --continue-train."""

from __future__ import annotations

import os

import pytest

from snapshot_store import LaunchEnv
from snapshot_store.run_lock import RunLock
from trainer.checks import preflight
from trainer.config import RunConfig
from trainer.options import UsageError


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
