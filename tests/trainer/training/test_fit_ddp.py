"""``trainer.fit`` with ddp=True: the Catalyst tutorial's example on 2 CPU workers matches one
process, a second call goes on from the first, a plain script spawns its workers and joins
torchrun's, a real notebook runs through a real kernel, and no semaphore is leaked."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import trainer
from snapshot_store import read_store
from tests.fixtures.runs.fit import (
    NUM_EPOCHS,
    NUM_SAMPLES,
    catalyst_parts,
    check_store,
    linear_parts,
    regression_datasets,
    small_datasets,
)
from tests.fixtures.runs.training import clean_env

REPO = Path(__file__).resolve().parents[3]
NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "fit_ddp.ipynb"

# --- the Catalyst example -------------------------------------------------------------------


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
    check_store(result, steps_per_epoch=math.ceil(NUM_SAMPLES / 64))


@pytest.mark.integration
def test_fit_twice_continues_from_the_callers_objects(tmp_path):
    """A second ddp=True call (say, the next notebook cell) goes on from the state the first left."""
    torch.manual_seed(0)
    model, criterion, optimizer = linear_parts()
    kwargs = dict(
        datasets=small_datasets(256),
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
from trainer.training import spawn


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
    proc = subprocess.run(
        [sys.executable, *launcher, str(script), str(out)],
        cwd=tmp_path,
        env=clean_env(),
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
