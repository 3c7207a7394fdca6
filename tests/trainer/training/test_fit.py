"""``trainer.fit``: the Catalyst tutorial's example in one process and with ddp=True, early
stopping, bad input caught before any worker starts, and a real notebook through a real kernel."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import TensorDataset

import trainer
from snapshot_store import read_store
from trainer.training import checks, start_method
from trainer.training import fit as api
from trainer.training.checks import FitInputError

REPO = Path(__file__).resolve().parents[3]
NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "fit_ddp.ipynb"

NUM_SAMPLES, NUM_FEATURES, NUM_EPOCHS = 10_000, 10, 8


# --- module-level parts (spawned workers import them by name) ---------------------------------


def regression_datasets() -> dict[str, TensorDataset]:
    """The Catalyst tutorial's data: 10,000 samples of 10 features, validated on the same loader."""
    generator = torch.Generator().manual_seed(42)
    features = torch.rand(NUM_SAMPLES, NUM_FEATURES, generator=generator)
    weights = torch.linspace(-1.0, 1.0, NUM_FEATURES).unsqueeze(1)
    targets = features @ weights + 0.1 * torch.randn(NUM_SAMPLES, 1, generator=generator)
    dataset = TensorDataset(features, targets)
    return {"train": dataset, "valid": dataset}


def catalyst_parts(seed: int = 0):
    torch.manual_seed(seed)
    model = nn.Linear(NUM_FEATURES, 1)
    optimizer = torch.optim.Adam(model.parameters())
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [3, 6])
    return model, nn.MSELoss(), optimizer, scheduler


class ScriptedValidation(nn.Module):
    """Trains as a linear model; in validation its loss is ``VAL_CURVE[n]`` for the n-th validation.

    The validation targets are zero and each output is ``sqrt(curve value)``, so the
    recorded validation loss (MSE) is exactly the scripted curve.
    """

    VAL_CURVE = [3.0, 2.0, 1.0, 0.5, 0.499, 0.498, 0.1, 0.05, 0.01, 0.0]

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 1)
        self.validations = 0

    def train(self, mode: bool = True) -> ScriptedValidation:
        if not mode:
            self.validations += 1
        return super().train(mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        if self.training:
            return out
        value = math.sqrt(self.VAL_CURVE[self.validations - 1])
        return out * 0 + value


def scripted_datasets() -> dict[str, TensorDataset]:
    x = torch.rand(64, 2, generator=torch.Generator().manual_seed(0))
    return {
        "train": TensorDataset(x, x.sum(1, keepdim=True)),
        "valid": TensorDataset(x[:8], torch.zeros(8, 1)),
    }


def _train_points(num_steps: int, steps_per_epoch: int, print_freq: int) -> list[int]:
    """Steps at which the loop records the train loss: every print_freq steps and at epoch ends."""
    return [s for s in range(1, num_steps + 1) if s % print_freq == 0 or s % steps_per_epoch == 0]


# --- the Catalyst example -------------------------------------------------------------------


@pytest.fixture(scope="module")
def single_process_run(tmp_path_factory):
    """The tutorial in one process with batch 64 (shared by the tests comparing against it)."""
    model, criterion, optimizer, scheduler = catalyst_parts()
    out = tmp_path_factory.mktemp("single")
    result = trainer.fit(
        model,
        criterion,
        optimizer,
        datasets=regression_datasets(),
        batch_size=64,
        num_epochs=NUM_EPOCHS,
        scheduler=scheduler,
        checkpoints_dir=out,
        remote=True,
        name="linreg",
        device="cpu",
    )
    return result, model, optimizer, scheduler


def _check_store(result, steps_per_epoch: int) -> None:
    history, reader, update = read_store(result.run_dir / "pickle")
    assert not reader.warnings
    assert update.status["state"] == "finished"
    total = steps_per_epoch * NUM_EPOCHS
    val_steps, _, _, val_values = history.series(("val", "loss"))
    assert val_steps == [steps_per_epoch * (e + 1) for e in range(NUM_EPOCHS)]
    assert val_values == pytest.approx(result.values("val/loss"))
    train_steps, *_ = history.series(("train", "loss"))
    assert train_steps == _train_points(total, steps_per_epoch, print_freq=10)
    lr_steps, _, _, lrs = history.series(("lr", "lr"))
    assert lrs[0] == pytest.approx(1e-3) and lrs[-1] == pytest.approx(
        1e-5
    )  # MultiStepLR at 3 and 6


def test_catalyst_example_in_one_process(single_process_run):
    result, model, optimizer, scheduler = single_process_run
    assert result.model is model
    assert result.epochs_completed == NUM_EPOCHS and not result.stopped_early
    assert result.global_step == math.ceil(NUM_SAMPLES / 64) * NUM_EPOCHS
    losses = result.values("val/loss")
    assert losses[-1] < losses[0]
    assert result.best_value == min(losses) and result.best_epoch == losses.index(min(losses)) + 1
    assert result.best_checkpoint.exists() and result.latest_checkpoint.exists()
    assert scheduler.last_epoch == NUM_EPOCHS
    _check_store(result, steps_per_epoch=math.ceil(NUM_SAMPLES / 64))


@pytest.mark.integration
def test_catalyst_example_ddp_two_cpu_workers_matches(single_process_run, tmp_path):
    """ddp=True on 2 CPU workers of batch 32: the same effective batch, the same training."""
    single, *_ = single_process_run
    model, criterion, optimizer, scheduler = catalyst_parts()
    before = model.weight.detach().clone()
    result = trainer.fit(
        model,
        criterion,
        optimizer,
        dataset_fn=regression_datasets,
        batch_size=32,
        num_epochs=NUM_EPOCHS,
        scheduler=scheduler,
        checkpoints_dir=tmp_path,
        remote=True,
        name="linreg",
        ddp=True,
        nprocs=2,
        device="cpu",
        start_method="spawn",
    )
    # The trained weights, optimizer and scheduler state came back into the caller's objects.
    assert result.model is model and not torch.equal(model.weight, before)
    assert torch.allclose(model.weight, single.model.weight, atol=1e-5)
    assert optimizer.state[model.weight]["step"].item() == result.global_step
    assert scheduler.last_epoch == NUM_EPOCHS
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-5)
    assert result.global_step == single.global_step
    assert result.values("val/loss") == pytest.approx(single.values("val/loss"), rel=1e-4)
    assert result.values("train/loss") == pytest.approx(single.values("train/loss"), rel=1e-4)
    assert result.best_epoch == single.best_epoch
    _check_store(result, steps_per_epoch=math.ceil(NUM_SAMPLES / 64))


@pytest.mark.integration
def test_fit_twice_continues_from_the_callers_objects(tmp_path):
    """A second ddp=True call (say, the next notebook cell) goes on from the state the first left."""
    torch.manual_seed(0)
    model, criterion, optimizer = _linear_parts()
    kwargs = dict(
        datasets=_small_datasets(256),
        batch_size=16,
        num_epochs=1,
        ddp=True,
        nprocs=2,
        device="cpu",
        start_method="fork",
        checkpoints_dir=tmp_path,
        remote=True,
    )
    first = trainer.fit(model, criterion, optimizer, name="first", **kwargs)
    assert optimizer.state[model.weight]["step"].item() == first.global_step == 8
    second = trainer.fit(model, criterion, optimizer, name="second", **kwargs)
    assert optimizer.state[model.weight]["step"].item() == 16
    assert second.values("val/loss")[0] < first.values("val/loss")[0]


# --- from a plain script, and under torchrun --------------------------------------------------

SCRIPT = """
import json, os, sys

import torch
from torch import nn
from torch.utils.data import TensorDataset

import trainer
from trainer import spawn


class Net(nn.Module):  # defined in the script: spawned workers re-import it from __main__
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 1)

    def forward(self, x):
        return self.linear(x)


def make_datasets():
    x = torch.rand(256, 4, generator=torch.Generator().manual_seed(1))
    dataset = TensorDataset(x, x.sum(1, keepdim=True))
    return {"train": dataset, "valid": dataset}


if __name__ == "__main__":
    launched = []
    real_launch = spawn.launch

    def recording_launch(*args, **kwargs):
        launched.append(kwargs["nprocs"])
        return real_launch(*args, **kwargs)

    spawn.launch = recording_launch
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    result = trainer.fit(model, nn.MSELoss(), optimizer, dataset_fn=make_datasets, batch_size=16,
                         num_epochs=2, ddp=True, nprocs=2, device="cpu",
                         checkpoints_dir=sys.argv[1], name="script", remote=True)
    line = "RESULT " + json.dumps({"launched": launched, "rank": int(os.environ.get("RANK", 0)),
                                   "val": result.values("val/loss"), "steps": result.global_step,
                                   "weight": model.linear.weight.flatten().tolist()}) + "\\n"
    # Both ranks share one pipe: one write of under PIPE_BUF bytes can not interleave.
    sys.stdout.flush()
    os.write(1, line.encode())
"""


def _run_script(tmp_path: Path, *launcher: str) -> list[dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "train_script.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(var, None)
    proc = subprocess.run(
        [sys.executable, *launcher, str(script), str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [
        json.loads(line.split("RESULT ", 1)[1])
        for line in proc.stdout.splitlines()
        if line.startswith("RESULT ")
    ]
    history, _, update = read_store(out / "script" / "pickle")
    assert update.meta["world_size"] == 2 and len(history.series(("val", "loss"))[0]) == 2
    return sorted(results, key=lambda r: r["rank"])


@pytest.mark.integration
def test_script_spawns_and_torchrun_joins_the_same_training(tmp_path, port):
    """``python train.py`` starts 2 workers itself; under torchrun it starts none, and trains the same."""
    (spawned,) = _run_script(tmp_path / "spawned")
    assert spawned["launched"] == [2]
    joined = _run_script(
        tmp_path / "torchrun",
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-port",
        str(port),
    )
    assert [r["rank"] for r in joined] == [0, 1]
    for rank_result in joined:
        assert rank_result["launched"] == []  # already in a process group: nothing started
        assert rank_result["steps"] == spawned["steps"] == 2 * 256 // (2 * 16)
        assert rank_result["val"] == pytest.approx(spawned["val"], rel=1e-5)
        assert rank_result["weight"] == pytest.approx(spawned["weight"], rel=1e-5)


# --- early stopping -------------------------------------------------------------------------


def test_early_stopping_stops_at_the_expected_epoch(tmp_path):
    """Best at epoch 4; epochs 5 and 6 improve by less than min_delta; patience 2 stops after 6."""
    torch.manual_seed(0)
    model = ScriptedValidation()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    result = trainer.fit(
        model,
        nn.MSELoss(),
        optimizer,
        datasets=scripted_datasets(),
        batch_size=16,
        num_epochs=10,
        patience=2,
        min_delta=0.01,
        checkpoints_dir=tmp_path,
        remote=True,
        name="early",
        device="cpu",
    )
    assert result.stopped_early
    assert result.epochs_completed == 6
    assert result.best_epoch == 4 and result.best_value == pytest.approx(0.5)
    assert result.values("val/loss") == pytest.approx(ScriptedValidation.VAL_CURVE[:6])
    history, _, update = read_store(tmp_path / "early" / "pickle")
    assert len(history.series(("val", "loss"))[0]) == 6
    assert update.status["stopped_early"] is True


def test_without_min_delta_small_improvements_count(tmp_path):
    model = ScriptedValidation()
    result = trainer.fit(
        model,
        nn.MSELoss(),
        torch.optim.SGD(model.parameters(), lr=0.1),
        datasets=scripted_datasets(),
        batch_size=16,
        num_epochs=10,
        patience=2,
        checkpoints_dir=tmp_path,
        remote=True,
        name="early0",
        device="cpu",
    )
    assert not result.stopped_early and result.epochs_completed == 10
    assert result.best_epoch == 10


# --- bad input, caught before any worker starts ----------------------------------------------


@pytest.fixture
def no_workers(monkeypatch):
    """Fail the test if a worker is started or training begins."""

    def refuse(*args, **kwargs):
        raise AssertionError("training started despite bad input")

    monkeypatch.setattr(torch.multiprocessing, "start_processes", refuse)
    monkeypatch.setattr(api, "_fit_here", refuse)  # after every check


def _linear_parts(in_features: int = NUM_FEATURES):
    model = nn.Linear(in_features, 1)
    return model, nn.MSELoss(), torch.optim.Adam(model.parameters())


def _small_datasets(n: int = 16):
    x = torch.rand(n, NUM_FEATURES)
    ds = TensorDataset(x, x.sum(1, keepdim=True))
    return {"train": ds, "valid": ds}


def test_missing_split_is_reported(no_workers, tmp_path):
    model, criterion, optimizer = _linear_parts()
    with pytest.raises(FitInputError, match=r"no 'valid' split \(it has \['test', 'train'\]\)"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets={"train": _small_datasets()["train"], "test": []},
            batch_size=4,
            num_epochs=1,
            ddp=True,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(FitInputError, match="no 'train' split"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            dataset_fn=lambda: {"val": []},
            batch_size=4,
            num_epochs=1,
            ddp=True,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(FitInputError, match="exactly one of datasets"):
        trainer.fit(model, criterion, optimizer, batch_size=4, num_epochs=1)


def test_model_failing_on_one_batch_reports_shapes(no_workers, tmp_path):
    model, criterion, optimizer = _linear_parts(in_features=5)
    with pytest.raises(
        FitInputError,
        match=r"the model failed on one batch of 2 training samples "
        r"\(inputs float32\[2, 10\], targets float32\[2, 1\]\): RuntimeError: mat1",
    ):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=8,
            num_epochs=1,
            ddp=True,
            nprocs=2,
            device="cpu",
            checkpoints_dir=tmp_path,
        )


def test_criterion_failing_or_not_a_mean_is_reported(no_workers, tmp_path):
    model, _, optimizer = _linear_parts()
    with pytest.raises(
        FitInputError,
        match=r"the criterion failed .*model outputs float32\[2, 1\], "
        r"targets float32\[2, 1\]",
    ):
        trainer.fit(
            model,
            nn.CrossEntropyLoss(label_smoothing=2.0),
            optimizer,
            datasets=_small_datasets(),
            batch_size=8,
            num_epochs=1,
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(
        FitInputError, match=r"scalar tensor, got float32\[2, 1\].*reduction='none'"
    ):
        trainer.fit(
            model,
            nn.MSELoss(reduction="none"),
            optimizer,
            datasets=_small_datasets(),
            batch_size=8,
            num_epochs=1,
            checkpoints_dir=tmp_path,
        )


def test_check_leaves_batchnorm_statistics_alone():
    model = nn.Sequential(nn.Linear(NUM_FEATURES, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    checks.check_one_batch(model, nn.MSELoss(), _small_datasets()["train"])
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_more_gpus_than_exist(no_workers, monkeypatch, tmp_path):
    model, criterion, optimizer = _linear_parts()
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(
        FitInputError, match=r"asks for 2 GPU worker\(s\) but this machine has GPU 0"
    ):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=4,
            num_epochs=1,
            ddp=True,
            nprocs=2,
            device="cuda",
            checkpoints_dir=tmp_path,
        )
    with pytest.raises(FitInputError, match=r"\(GPU 3\) but this machine has GPU 0"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=4,
            num_epochs=1,
            ddp=True,
            device=[0, 3],
            checkpoints_dir=tmp_path,
        )
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(FitInputError, match="has no CUDA GPU; .*device='cpu'"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=4,
            num_epochs=1,
            ddp=True,
            device="cuda:0",
            checkpoints_dir=tmp_path,
        )


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
    model, criterion, optimizer = _linear_parts()
    with pytest.raises(
        start_method.UnpicklableArgumentError, match="argument 'dataset_fn'.*module level"
    ):
        trainer.fit(
            model,
            criterion,
            optimizer,
            dataset_fn=lambda: _small_datasets(),
            batch_size=4,
            num_epochs=1,
            ddp=True,
            nprocs=2,
            device="cpu",
            start_method="spawn",
            checkpoints_dir=tmp_path,
        )
    data = _small_datasets()
    data["valid"] = TensorDataset(*data["valid"].tensors)
    data["valid"].transform = lambda x: x
    with pytest.raises(
        start_method.UnpicklableArgumentError, match=r"argument \"datasets\['valid'\]\""
    ):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=data,
            batch_size=4,
            num_epochs=1,
            ddp=True,
            nprocs=2,
            device="cpu",
            start_method="spawn",
            checkpoints_dir=tmp_path,
        )


def test_other_bad_arguments(no_workers, tmp_path):
    model, criterion, optimizer = _linear_parts()
    other = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(FitInputError, match="parameters that are not the model's"):
        trainer.fit(model, criterion, other, datasets=_small_datasets(), batch_size=4, num_epochs=1)
    with pytest.raises(TypeError, match="unknown run option 'n_epoch'"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=4,
            num_epochs=1,
            n_epoch=3,
        )
    with pytest.raises(ValueError, match="no_such_module"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets=_small_datasets(),
            batch_size=4,
            num_epochs=1,
            remote_transfer_cmd="no_such_module.save",
            checkpoints_dir=str(tmp_path / "checkpoints"),
        )
    assert not (tmp_path / "checkpoints").exists(), "a refused run writes nothing"
    with pytest.raises(FitInputError, match=r"\(input, target\) pair"):
        trainer.fit(
            model,
            criterion,
            optimizer,
            datasets={"train": [1, 2], "valid": [1, 2]},
            batch_size=4,
            num_epochs=1,
        )


# --- a real notebook through a real kernel ----------------------------------------------------


@pytest.fixture
def kernel_name(tmp_path, monkeypatch) -> str:
    """A kernelspec running this venv's python, installed into a temp dir found via JUPYTER_PATH."""
    prefix = tmp_path / "jupyter"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(prefix),
            "--name",
            "trainer-test",
        ],
        check=True,
        capture_output=True,
    )
    spec = json.loads((prefix / "share/jupyter/kernels/trainer-test/kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    monkeypatch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return "trainer-test"


@pytest.mark.integration
def test_notebook_fit_ddp_with_fork(kernel_name, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("FIT_NOTEBOOK_OUT", str(tmp_path / "checkpoints"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name=kernel_name,
        timeout=240,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError with the cell's traceback on failure
    outputs = "".join(o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", []))
    assert "start method: fork" in outputs
    assert "NOTEBOOK OK" in outputs
    history, _, update = read_store(tmp_path / "checkpoints" / "nb-linreg" / "pickle")
    assert update.meta["world_size"] == 2
    assert len(history.series(("val", "loss"))[0]) == 3


_DDP_SCRIPT = """
import sys
import torch, torch.nn as nn, trainer
from torch.utils.data import TensorDataset

def datasets():
    x = torch.randn(64, 4)
    return {"train": TensorDataset(x, x.sum(1, keepdim=True)), "val": TensorDataset(x, x.sum(1, keepdim=True))}

if __name__ == "__main__":
    model = nn.Linear(4, 1)
    trainer.fit(model, nn.MSELoss(), torch.optim.SGD(model.parameters(), lr=0.01),
                dataset_fn=datasets, batch_size=16, num_epochs=1, checkpoints_dir=sys.argv[1],
                remote=True, ddp=True, nprocs=2, device="cpu", start_method="spawn")
"""


@pytest.mark.integration
def test_fit_ddp_ends_without_leaked_semaphores(tmp_path):
    # tqdm's lock across processes, made in each spawned worker, outlived it.
    script = tmp_path / "train.py"
    script.write_text(_DDP_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "checkpoints")],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "leaked" not in result.stderr, result.stderr[-2000:]
