"""Helpers for the trainer tests: clean launcher environments and command lines."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Variables a launcher sets; a test process must not inherit them from whoever runs pytest.
LAUNCHER_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT",
)


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without launcher variables, plus ``extra``."""
    env = {
        k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and not k.startswith("SLURM_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"  # 2 processes on 2 cores: no oversubscription
    env.update(extra)
    return env


def trainer_cmd(*args: str) -> list[str]:
    """``python -m trainer <args>`` with this interpreter."""
    return [sys.executable, "-m", "trainer", *args]


def torchrun_cmd(*args: str) -> list[str]:
    """``torchrun <args>`` with this interpreter (no PATH lookup)."""
    return [sys.executable, "-m", "torch.distributed.run", *args]


def run(cmd: list[str], cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` to completion with a clean environment; output captured as text."""
    return subprocess.run(
        cmd, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=timeout
    )


def train_args(dataroot: Path, checkpoints: Path, name: str, *extra: str) -> list[str]:
    """Fast, deterministic training options for the tiny dataset."""
    return [
        "--dataroot",
        str(dataroot),
        "--checkpoints-dir",
        str(checkpoints),
        "--name",
        name,
        "--gpu-ids",
        "-1",
        "--remote",
        "True",
        "--print-freq",
        "1",
        "--display-freq",
        "0",
        *extra,
    ]


def read_run(run_dir: Path):
    """``(history, meta, status)`` of a run's snapshot store, read the way the visualizer reads it."""
    from snapshot_store import read_store

    history, reader, update = read_store(run_dir / "pickle")
    assert not reader.warnings, reader.warnings
    return history, update.meta, update.status


def series(history, key: str) -> tuple[list[int], list[float]]:
    """Steps and values of ``"group/name"``, one point per step (the latest)."""
    group, name = key.split("/")
    steps, _, _, values = history.series((group, name))
    return list(steps), list(values)


def raw_steps(run_dir: Path, key: str) -> list[int]:
    """Every step recorded for ``key`` in every segment, duplicates included."""
    from snapshot_store import StoreReader

    group, name = key.split("/")
    update = StoreReader(run_dir / "pickle").poll()
    return [s for g, n, steps, *_ in update.scalars if (g, n) == (group, name) for s in steps]


def start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    """Start ``cmd`` with a clean environment; stdout and stderr piped as text."""
    return subprocess.Popen(
        cmd, cwd=cwd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_file(
    run_dir: Path, pattern: str, proc: subprocess.Popen, timeout: float = 120
) -> None:
    """Wait until ``run_dir`` holds a file matching ``pattern`` (a run some epochs in)."""
    deadline = time.monotonic() + timeout
    while not list(run_dir.glob(pattern)):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"no {pattern} in {run_dir} after {timeout:.0f} s"
        time.sleep(0.2)
