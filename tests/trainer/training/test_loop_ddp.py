"""trainer.training.loop under real torchrun: 2 DDP ranks equal 1 process with twice the batch,
and an elastic restart after a killed worker finishes the same run with a gap-free curve."""

from __future__ import annotations

import pytest
import torch

from tests.fixtures.runs.training import (
    raw_steps,
    read_run,
    run,
    series,
    torchrun_cmd,
    train_args,
    trainer_cmd,
)

STEPS_PER_EPOCH = 6  # 48 training images, batch 8 (here: 2 ranks of batch 4)


DDP_ARGS = (
    "--n-epochs",
    "2",
    "--optimizer",
    "sgd",
    "--lr",
    "0.05",
    "--lr-policy",
    "step",
    "--lr-decay-epochs",
    "1",
    "--save-latest-freq",
    "2",
    "--seed",
    "3",
)
TIMEOUT = 180


@pytest.fixture(scope="module")
def two_ranks(tiny_dataset, tmp_path_factory):
    """2 DDP ranks of batch 4 under torchrun: the reference for equivalence and restart."""
    checkpoints = tmp_path_factory.mktemp("ddp")
    result = run(
        torchrun_cmd(
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "trainer",
            "train",
            *train_args(tiny_dataset, checkpoints, "ddp", "--batch-size", "4", *DDP_ARGS),
        ),
        cwd=checkpoints,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return checkpoints / "ddp"


def _params(run_dir) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "latest.pth", weights_only=True)["model"]


@pytest.mark.integration
def test_two_ddp_ranks_equal_one_process_with_twice_the_batch(tiny_dataset, tmp_path, two_ranks):
    result = run(
        trainer_cmd(
            "train", *train_args(tiny_dataset, tmp_path, "one", "--batch-size", "8", *DDP_ARGS)
        ),
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ddp, single = _params(two_ranks), _params(tmp_path / "one")
    for name in single:
        torch.testing.assert_close(ddp[name], single[name], rtol=1e-4, atol=1e-5, msg=name)
    ddp_history, _, _ = read_run(two_ranks)
    single_history, _, _ = read_run(tmp_path / "one")
    for key in ("train/loss", "val/loss", "metric/accuracy"):
        ddp_steps, ddp_values = series(ddp_history, key)
        single_steps, single_values = series(single_history, key)
        assert ddp_steps == single_steps, key
        torch.testing.assert_close(
            torch.tensor(ddp_values), torch.tensor(single_values), rtol=1e-4, atol=1e-5, msg=key
        )
    assert len(series(ddp_history, "train/loss")[0]) == 2 * STEPS_PER_EPOCH


# The elastic-restart test's worker: `trainer train`, but rank 1 of the first attempt is
# SIGKILLed just before step 9 (mid epoch 2), from the test's side of the code.
CRASHING_TRAIN = """
import os, signal, sys
from trainer.command import cli
from trainer.training import loop

run_batch = loop.Trainer._run_batch

def crash_before_step_9(self, inputs, targets):
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    if first_attempt and os.environ.get("RANK") == "1" and self.state.step + 1 == 9:
        os.kill(os.getpid(), signal.SIGKILL)
    return run_batch(self, inputs, targets)

loop.Trainer._run_batch = crash_before_step_9
sys.exit(cli.main(["train", *sys.argv[1:]]))
"""


@pytest.mark.integration
def test_elastic_restart_after_a_killed_worker_finishes_the_same_run(
    tiny_dataset, tmp_path, two_ranks
):
    """torchrun --max-restarts 1; rank 1 is SIGKILLed before step 9 (mid epoch 2)."""
    script = tmp_path / "crashing_train.py"
    script.write_text(CRASHING_TRAIN)
    result = run(
        torchrun_cmd(
            "--standalone",
            "--nproc_per_node",
            "2",
            "--max-restarts",
            "1",
            str(script),
            *train_args(tiny_dataset, tmp_path, "ddp", "--batch-size", "4", *DDP_ARGS),
        ),
        cwd=tmp_path,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "restart 1 of the worker group: resumed from" in result.stderr
    history, meta, status = read_run(tmp_path / "ddp")
    assert len(meta["sessions"]) == 2 and status["state"] == "finished"
    steps = raw_steps(tmp_path / "ddp", "train/loss")
    assert steps == list(range(1, 2 * STEPS_PER_EPOCH + 1))  # no gap, no step twice
    reference, _, _ = read_run(two_ranks)
    torch.testing.assert_close(
        torch.tensor(series(history, "train/loss")[1]),
        torch.tensor(series(reference, "train/loss")[1]),
        rtol=0,
        atol=0,
    )
    for name, value in _params(two_ranks).items():
        assert torch.equal(_params(tmp_path / "ddp")[name], value), name
