"""trainer.command.launch: torchrun in this process, its rendezvous on loopback, its end in one line."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.training import (
    LONG,
    read_run,
    run,
    start,
    train_args,
    trainer_cmd,
    wait_for_file,
)
from trainer.command import launch

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


def test_one_node_launch_meets_on_loopback_and_sigterm_stops_it(tiny_dataset, tmp_path):
    launch_cmd = trainer_cmd("launch", "--nproc-per-node", "2")
    proc = start([*launch_cmd, *train_args(tiny_dataset, tmp_path, "lo", *LONG)], tmp_path)
    try:
        wait_for_file(tmp_path / "lo", "latest.pth", proc)
        workers = _children(proc.pid)  # torchrun runs in the launcher's process: its children
        envs = [_environ(pid) for pid in workers]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
    assert sorted(e["RANK"] for e in envs) == ["0", "1"]
    assert {e["MASTER_ADDR"] for e in envs} == {launch.LOOPBACK}
    assert "--rdzv-endpoint=127.0.0.1:" in err.splitlines()[0]
    assert proc.returncode == ExitCode.TERMINATED and "Traceback" not in err, err[-3000:]
    assert err.strip().endswith("trainer launch: terminated")
    assert read_run(tmp_path / "lo")[2]["state"] == "stopped"


def test_a_failing_worker_gives_its_exit_status_in_one_line(tiny_dataset, tmp_path):
    # Checked by each worker (it needs the worker's device), not by the launcher.
    result = run(
        trainer_cmd(
            "launch",
            "--nproc-per-node",
            "2",
            *train_args(tiny_dataset, tmp_path, "fp16"),
            "--amp",
            "fp16",
        ),
        cwd=tmp_path,
    )
    assert result.returncode == ExitCode.USAGE, result.stderr[-3000:]
    assert "--amp fp16 needs a GPU" in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("exited with status 2")
