"""trainer.ranks.distributed: launcher detection and device choice (units), and real multi-process launches.

The launches each start 2 CPU processes (gloo) on loopback: from torchrun, from
Slurm-style variables without torchrun, from Kubernetes-style variables, and as
two torchrun "nodes" meeting at one rendezvous.
"""

from __future__ import annotations

import atexit
import os
import stat
import subprocess

import pytest
import torch

from run_core.launch_env import LaunchEnv, LaunchError
from run_core.launch_env import read_launch_env as detect
from tests.fixtures.runs.ranks import LAUNCH_TIMEOUT, check_two_rank_run, start_ranks, wait_all
from tests.fixtures.runs.training import (
    clean_env,
    read_run,
    series,
    torchrun_cmd,
    train_args,
    trainer_cmd,
)
from tests.fixtures.servers.net import free_port
from trainer.ranks.distributed import select_devices, settle_collectives_at_exit
from trainer.training.config import OptionError, RunConfig

NO_GPU = not torch.cuda.is_available()


# --- detection (no processes) ------------------------------------------------------------


def test_no_launcher_is_one_process():
    env = detect({})
    assert env == LaunchEnv() and env.is_rank_zero and not env.distributed


def test_torchrun_variables():
    env = detect(
        {
            "RANK": "3",
            "WORLD_SIZE": "4",
            "LOCAL_RANK": "1",
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "node0",
            "MASTER_PORT": "1234",
            "TORCHELASTIC_RUN_ID": "x",
            "TORCHELASTIC_RESTART_COUNT": "2",
        }
    )
    assert (env.rank, env.world_size, env.local_rank, env.launcher) == (3, 4, 1, "torchrun")
    assert (env.master_addr, env.master_port, env.restart_count) == ("node0", 1234, 2)
    assert not env.is_rank_zero


def test_kubernetes_style_variables_default_local_rank_to_zero():
    env = detect(
        {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "23456"}
    )
    assert (env.rank, env.local_rank, env.launcher) == (1, 0, "env")


def test_slurm_variables_with_a_plain_nodelist():
    env = detect(
        {
            "SLURM_PROCID": "1",
            "SLURM_NTASKS": "2",
            "SLURM_LOCALID": "1",
            "SLURM_NODELIST": "gpu17",
            "SLURM_JOB_ID": "4242",
        }
    )
    assert (env.rank, env.world_size, env.local_rank, env.launcher) == (1, 2, 1, "slurm")
    assert env.master_addr == "gpu17" and env.master_port == 15000 + 4242


def test_slurm_nodelist_is_expanded_with_scontrol(tmp_path, monkeypatch):
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\necho node07\necho node08\n")
    scontrol.chmod(scontrol.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    env = detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NODELIST": "node[07-08]"})
    assert env.master_addr == "node07"


def test_slurm_nodelist_without_scontrol_asks_for_master_addr(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LaunchError, match="MASTER_ADDR"):
        detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NODELIST": "node[07-08]"})


def test_a_one_task_slurm_allocation_is_one_process():
    assert detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) == LaunchEnv()


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, "outside"),
        ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "not an integer"),
    ],
)
def test_inconsistent_launcher_variables(environ, message):
    with pytest.raises(LaunchError, match=message):
        detect(environ)


# --- devices -----------------------------------------------------------------------------


def test_the_exit_settle_for_collectives_is_registered_once():
    # Each entry point that may join a process group calls it; one atexit handler results.
    settle_collectives_at_exit()
    before = atexit._ncallbacks()
    settle_collectives_at_exit()
    assert atexit._ncallbacks() == before


def test_cpu_devices():
    assert select_devices([-1], LaunchEnv()).device == torch.device("cpu")
    assert select_devices([-1], LaunchEnv()).backend == "gloo"
    if NO_GPU:
        assert (
            select_devices(None, LaunchEnv(rank=1, world_size=2, local_rank=1)).device.type == "cpu"
        )


@pytest.mark.skipif(not NO_GPU, reason="needs a machine without CUDA")
def test_absent_gpu_is_refused():
    with pytest.raises(LaunchError, match="--gpu-ids 0: this machine has no CUDA GPU"):
        select_devices([0], LaunchEnv())


@pytest.mark.parametrize("ids, message", [((-1, 0), "can not be mixed"), ((0, 0), "repeated")])
def test_bad_gpu_id_lists_are_refused_by_the_config(ids, message):
    with pytest.raises(OptionError, match=message):
        RunConfig(gpu_ids=ids)


# --- real launches -----------------------------------------------------------------------


@pytest.mark.integration
def test_slurm_launch_without_torchrun(tiny_dataset, tmp_path):
    port = str(free_port())
    cmd = trainer_cmd(
        "train",
        *train_args(tiny_dataset, tmp_path, "slurm", "--batch-size", "8", "--n-epochs", "1"),
    )
    ranks = [
        {
            "SLURM_PROCID": str(r),
            "SLURM_NTASKS": "2",
            "SLURM_LOCALID": str(r),
            "SLURM_NODELIST": "localhost",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        for r in range(2)
    ]
    outputs = wait_all(start_ranks(cmd, tmp_path, ranks))
    check_two_rank_run(tmp_path / "slurm", steps_per_epoch=3, epochs=1)
    assert "effective batch size 16" in outputs[0] and "(slurm launch)" in outputs[0]
    assert outputs[1].strip() == ""  # the other rank stays silent


@pytest.mark.integration
def test_kubernetes_style_launch(tiny_dataset, tmp_path):
    port = str(free_port())
    cmd = trainer_cmd(
        "train", *train_args(tiny_dataset, tmp_path, "k8s", "--batch-size", "8", "--n-epochs", "1")
    )
    ranks = [
        {"RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        for r in range(2)
    ]
    wait_all(start_ranks(cmd, tmp_path, ranks))
    check_two_rank_run(tmp_path / "k8s", steps_per_epoch=3, epochs=1)


@pytest.mark.integration
def test_two_nodes_meet_at_one_torchrun_rendezvous(tiny_dataset, tmp_path):
    port = str(free_port())
    args = train_args(tiny_dataset, tmp_path, "nodes", "--batch-size", "8", "--n-epochs", "2")
    nodes = [
        torchrun_cmd(
            "--nnodes",
            "2",
            "--nproc-per-node",
            "1",
            "--node-rank",
            str(n),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            port,
            "-m",
            "trainer",
            "train",
            *args,
        )
        for n in range(2)
    ]
    procs = [
        subprocess.Popen(
            cmd,
            cwd=tmp_path,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for cmd in nodes
    ]
    wait_all(procs)
    check_two_rank_run(tmp_path / "nodes", steps_per_epoch=3, epochs=2)
    _, meta, _ = read_run(tmp_path / "nodes")
    assert meta["options"]["world_size"] == 2


@pytest.mark.integration
def test_launch_errors_come_before_torchrun(tmp_path):
    result = subprocess.run(
        trainer_cmd("launch", "--nproc-per-node", "2", "--dataroot", str(tmp_path / "missing")),
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"trainer launch: error: --dataroot {tmp_path / 'missing'}: no such directory"
    ]


@pytest.mark.integration
def test_launch_runs_torchrun_end_to_end(tiny_dataset, tmp_path):
    """`trainer launch` = torchrun with 2 CPU workers; --remote True leaves a complete store."""
    result = subprocess.run(
        trainer_cmd(
            "launch",
            "--nproc-per-node",
            "2",
            *train_args(
                tiny_dataset,
                tmp_path,
                "launched",
                "--batch-size",
                "4",
                "--n-epochs",
                "2",
                "--display-freq",
                "3",
            ),
        ),
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=LAUNCH_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = tmp_path / "launched"
    check_two_rank_run(run_dir, steps_per_epoch=6, epochs=2)
    history, _, status = read_run(run_dir)
    assert {"train/loss", "val/loss", "metric/accuracy", "lr/lr", "throughput/samples_per_s"} <= {
        f"{g}/{n}" for g, n in history.keys()
    }
    _, epochs, _, _ = history.series(("train", "loss"))
    assert epochs[0] == pytest.approx(1 / 6) and epochs[-1] == pytest.approx(2.0)
    assert status["total_steps"] == 12 and status["effective_batch_size"] == 8
    from snapshot_store import StoreReader

    images = StoreReader(run_dir / "pickle").poll().images
    assert [record[2] for record in images] == [3, 6, 9, 12]  # steps with a prediction grid
    assert "effective batch size 8" in result.stderr
    for name in ("latest.pth", "best.pth", "loss_log.txt"):
        assert (run_dir / name).exists()
    state = torch.load(run_dir / "latest.pth", weights_only=True)
    assert (state["epoch"], state["step"], state["world_size"]) == (2, 12, 2)
    assert len(state["rng"]) == 2  # every rank's generators


@pytest.mark.cuda
@pytest.mark.integration
@pytest.mark.parametrize("gpus", [1, 2])
def test_nccl_ddp_with_one_process_per_gpu(tiny_dataset, tmp_path, gpus):
    if torch.cuda.device_count() < gpus:
        pytest.skip(f"needs {gpus} CUDA GPU(s), {torch.cuda.device_count()} here")
    args = train_args(tiny_dataset, tmp_path, "nccl", "--batch-size", "8", "--n-epochs", "1")
    at = args.index("--gpu-ids")
    del args[at : at + 2]  # each rank takes GPU local_rank
    cmd = torchrun_cmd(
        "--standalone", f"--nproc-per-node={gpus}", "-m", "trainer", "train", *args,
        "--system-metrics-interval", "0.05",
    )  # fmt: skip
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=LAUNCH_TIMEOUT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ("one process" if gpus == 1 else f"{gpus} processes") in proc.stderr + proc.stdout
    history, meta, status = read_run(tmp_path / "nccl")
    assert meta["world_size"] == gpus and status["state"] == "finished"
    steps, losses = series(history, "train/loss")
    assert steps and all(v > 0 for v in losses)
    assert ("system", "gpu_allocated_gib") in history.keys()
