"""trainer.training.checks: one writer per run dir, a reused run name, the transfer hook and its
destination, and fit's datasets, model, criterion, GPUs and arguments, all before training."""

from __future__ import annotations

import functools
import os
import time

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

import trainer
from run_core.exit_codes import ExitCode
from run_core.launch_env import LaunchEnv
from run_core.run_lock import RunLock
from tests.fixtures.runs.fit import NUM_FEATURES, linear_parts, small_datasets
from tests.fixtures.runs.training import train_args
from trainer.command import cli
from trainer.training import checks, start_method
from trainer.training import fit as api
from trainer.training.checks import FitInputError, preflight
from trainer.training.config import RunConfig, UsageError


def _config(tmp_path, **options) -> RunConfig:
    return RunConfig.from_options({"checkpoints_dir": tmp_path, "name": "run", **options})


def _old_run(config: RunConfig, checkpoint: bool) -> None:
    config.store_dir.mkdir(parents=True)
    for name in ("meta.pickle", "status.pickle", "scalars-00000000.pickle"):
        (config.store_dir / name).write_bytes(b"x")
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
    config.store_dir.mkdir()
    for name in ("meta.pickle", "status.pickle", ".status-reserve"):
        (config.store_dir / name).write_bytes(b"x")
    preflight(config, LaunchEnv())  # stopped while its ranks met: nothing recorded
    (config.store_dir / "scalars-00000000.pickle").write_bytes(b"x")
    preflight(_config(tmp_path, record=False), LaunchEnv())


def test_a_run_dir_another_writer_holds_is_refused_naming_it(tmp_path):
    config = _config(tmp_path)
    with RunLock(config.store_dir):
        with pytest.raises(UsageError, match=f"another writer, PID {os.getpid()} on this host"):
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


# --- fit's input, caught before any worker starts --------------------------------------------


@pytest.fixture
def no_workers(monkeypatch):
    """Fail the test if a worker is started or training begins."""

    def refuse(*args, **kwargs):
        raise AssertionError("training started despite bad input")

    monkeypatch.setattr(torch.multiprocessing, "start_processes", refuse)
    monkeypatch.setattr(api, "_fit_here", refuse)  # after every check


def _fit(model, criterion, optimizer, **options):
    """``trainer.fit`` of one epoch in batches of 4, unless ``options`` say otherwise."""
    return trainer.fit(model, criterion, optimizer, **{"batch_size": 4, "num_epochs": 1, **options})


def test_missing_split_is_reported(no_workers, tmp_path):
    model, criterion, optimizer = linear_parts()
    with pytest.raises(FitInputError, match=r"no 'valid' split \(it has \['test', 'train'\]\)"):
        _fit(
            model,
            criterion,
            optimizer,
            datasets={"train": small_datasets()["train"], "test": []},
            ddp=True,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(FitInputError, match="no 'train' split"):
        _fit(
            model,
            criterion,
            optimizer,
            dataset_fn=lambda: {"val": []},
            ddp=True,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(FitInputError, match="exactly one of datasets"):
        trainer.fit(model, criterion, optimizer, batch_size=4, num_epochs=1)


def test_model_failing_on_one_batch_reports_shapes(no_workers, tmp_path):
    model, criterion, optimizer = linear_parts(in_features=5)
    with pytest.raises(
        FitInputError,
        match=r"the model failed on one batch of 2 training samples "
        r"\(inputs float32\[2, 10\], targets float32\[2, 1\]\): RuntimeError: mat1",
    ):
        _fit(
            model,
            criterion,
            optimizer,
            datasets=small_datasets(),
            batch_size=8,
            ddp=True,
            nprocs=2,
            device="cpu",
            checkpoints_dir=tmp_path,
        )


def test_criterion_failing_or_not_a_mean_is_reported(no_workers, tmp_path):
    model, _, optimizer = linear_parts()
    with pytest.raises(
        FitInputError,
        match=r"the criterion failed .*model outputs float32\[2, 1\], "
        r"targets float32\[2, 1\]",
    ):
        _fit(
            model,
            nn.CrossEntropyLoss(label_smoothing=2.0),
            optimizer,
            datasets=small_datasets(),
            batch_size=8,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(
        FitInputError, match=r"scalar tensor, got float32\[2, 1\].*reduction='none'"
    ):
        _fit(
            model,
            nn.MSELoss(reduction="none"),
            optimizer,
            datasets=small_datasets(),
            batch_size=8,
            checkpoints_dir=tmp_path,
        )


def test_check_leaves_batchnorm_statistics_alone():
    model = nn.Sequential(nn.Linear(NUM_FEATURES, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    checks.check_one_batch(model, nn.MSELoss(), small_datasets()["train"])
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_more_gpus_than_exist(no_workers, monkeypatch, tmp_path):
    parts = linear_parts()
    cuda_run = functools.partial(
        _fit, *parts, datasets=small_datasets(), ddp=True, checkpoints_dir=tmp_path
    )
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(
        FitInputError, match=r"asks for 2 GPU worker\(s\) but this machine has GPU 0"
    ):
        cuda_run(nprocs=2, device="cuda")
    with pytest.raises(FitInputError, match=r"\(GPU 3\) but this machine has GPU 0"):
        cuda_run(device=[0, 3])
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(FitInputError, match="has no CUDA GPU; .*device='cpu'"):
        cuda_run(device="cuda:0")


def test_plan_workers_defaults(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert checks.plan_workers("auto", None) == (checks.DEFAULT_CPU_PROCS, [])
    assert checks.plan_workers("cpu", 3) == (3, [])
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert checks.plan_workers("auto", None) == (4, [0, 1, 2, 3])
    assert checks.plan_workers("cuda", 2) == (2, [0, 1])
    assert checks.plan_workers([2, 3], None) == (2, [2, 3])
    assert checks.plan_workers("cpu", None) == (checks.DEFAULT_CPU_PROCS, [])


def test_unpicklable_lambda_names_the_argument(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("a worker was started")

    monkeypatch.setattr(torch.multiprocessing, "start_processes", refuse)
    spawned = functools.partial(
        _fit,
        *linear_parts(),
        ddp=True,
        nprocs=2,
        device="cpu",
        start_method="spawn",
        checkpoints_dir=tmp_path,
    )
    with pytest.raises(
        start_method.UnpicklableArgumentError, match="argument 'dataset_fn'.*module level"
    ):
        spawned(dataset_fn=lambda: small_datasets())
    data = small_datasets()
    data["valid"] = TensorDataset(*data["valid"].tensors)
    data["valid"].transform = lambda x: x
    with pytest.raises(
        start_method.UnpicklableArgumentError, match=r"argument \"datasets\['valid'\]\""
    ):
        spawned(datasets=data)


def test_other_bad_arguments(no_workers, tmp_path):
    model, criterion, optimizer = linear_parts()
    other = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(FitInputError, match="parameters that are not the model's"):
        _fit(model, criterion, other, datasets=small_datasets())
    with pytest.raises(TypeError, match="unknown run option 'n_epoch'"):
        _fit(model, criterion, optimizer, datasets=small_datasets(), n_epoch=3)
    with pytest.raises(ValueError, match="no_such_module"):
        _fit(
            model,
            criterion,
            optimizer,
            datasets=small_datasets(),
            remote_transfer_cmd="no_such_module.save",
            checkpoints_dir=str(tmp_path / "checkpoints"),
        )
    assert not (tmp_path / "checkpoints").exists(), "a refused run writes nothing"
    with pytest.raises(FitInputError, match=r"\(input, target\) pair"):
        _fit(model, criterion, optimizer, datasets={"train": [1, 2], "valid": [1, 2]})
