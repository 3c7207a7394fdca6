"""The one rank source: an initialised group, then RANK+WORLD_SIZE, then Slurm, else 0."""

from __future__ import annotations

import os

import pytest

from run_core.launch_env import LaunchError, read_launch_env


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch):
    """Start every test as a plain ``python script.py``: no launcher variable set."""
    launcher_vars = {
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_RESTART_COUNT",
    }
    for name in list(os.environ):
        if name in launcher_vars or name.startswith("SLURM_"):
            monkeypatch.delenv(name)


def _torchrun(monkeypatch, rank: str, world_size: str = "2") -> None:
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", world_size)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")


def _srun(monkeypatch, procid: str, ntasks: str) -> None:
    monkeypatch.setenv("SLURM_PROCID", procid)
    monkeypatch.setenv("SLURM_NTASKS", ntasks)
    monkeypatch.setenv("SLURM_NODELIST", "node7")
    monkeypatch.setenv("SLURM_JOB_ID", "1234")


def test_no_launcher_is_rank_zero():
    assert read_launch_env().rank == 0
    assert read_launch_env().launcher == "none"


def test_local_rank_or_rank_alone_is_not_a_launch(monkeypatch):
    # Only a world size says how many processes there are; LOCAL_RANK is per node.
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setenv("RANK", "2")
    assert read_launch_env().rank == 0


def test_rank_and_world_size(monkeypatch):
    _torchrun(monkeypatch, rank="1")
    assert read_launch_env().rank == 1


def test_slurm_with_more_than_one_task(monkeypatch):
    _srun(monkeypatch, procid="3", ntasks="4")
    env = read_launch_env()
    assert (env.rank, env.world_size, env.launcher, env.master_addr) == (3, 4, "slurm", "node7")
    assert read_launch_env().rank == 3


def test_slurm_with_one_task_is_one_process(monkeypatch):
    # An interactive `salloc` shell: SLURM_PROCID=0 of one task, or a stale id.
    _srun(monkeypatch, procid="5", ntasks="1")
    assert read_launch_env().rank == 0


def test_rank_and_world_size_win_over_slurm(monkeypatch):
    # torchrun started by srun: torchrun's RANK is the global one.
    _srun(monkeypatch, procid="1", ntasks="2")
    _torchrun(monkeypatch, rank="3", world_size="8")
    assert read_launch_env().rank == 3


def test_an_initialised_process_group_wins_over_the_environment(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    dist = torch.distributed
    _torchrun(monkeypatch, rank="1")  # what a launcher said; the group is the truth
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1
    )
    try:
        env = read_launch_env()
        assert (env.rank, env.world_size, env.launcher) == (0, 1, "initialized")
        assert read_launch_env().rank == 0
    finally:
        dist.destroy_process_group()
    assert read_launch_env().rank == 1


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not an integer"),
        ({"RANK": "0", "WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not an integer"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "rank 2 is outside world size 2"),
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "rank -1 is outside world size 2"),
        ({"RANK": "1", "WORLD_SIZE": "2"}, "MASTER_ADDR and MASTER_PORT are not both set"),
        ({"SLURM_PROCID": "p", "SLURM_NTASKS": "2"}, "SLURM_PROCID='p' is not an integer"),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "n"}, "SLURM_NTASKS='n' is not an integer"),
    ],
)
def test_bad_launch_variables_are_a_launch_error(monkeypatch, variables, message):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(LaunchError, match=message):
        read_launch_env()
