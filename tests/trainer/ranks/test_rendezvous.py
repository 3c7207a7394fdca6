"""The seeds' Kubernetes wrapper, reproduced with real processes (gloo, CPU, 2 ranks, loopback).

Each "pod" calls ``init_process_group`` itself, then runs ``trainer train`` as a
child with the same ``MASTER_*``, ``RANK`` and ``WORLD_SIZE``: the launcher's
group holds MASTER_PORT, and the trainer's ranks meet through its store.
"""

from __future__ import annotations

import functools
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.ranks import check_two_rank_run, start_ranks, wait_all
from tests.fixtures.runs.training import clean_env, train_args, trainer_cmd
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import reap
from tests.fixtures.servers.waiting import EXIT_WAIT_S, wait_until

pytestmark = pytest.mark.integration

# The seed's wrapper (docs: "Kubernetes-Based Training Service"), on gloo for the CPU.
WRAPPER = textwrap.dedent(
    """
    import os
    import subprocess
    import sys

    import torch.distributed as dist


    def init_process():
        dist.init_process_group(
            backend="gloo",
            init_method="tcp://" + os.environ["MASTER_ADDR"] + ":" + os.environ["MASTER_PORT"],
            rank=int(os.environ["RANK"]),
            world_size=int(os.environ["WORLD_SIZE"]),
        )


    if __name__ == "__main__":
        init_process()
        for run in range(int(os.environ.get("RUNS", "1"))):
            more = ["--continue-train", "--n-epochs", str(run + 1)] if run else []
            cmd = [sys.executable, "-m", "trainer", "train", *sys.argv[1:], *more]
            done = subprocess.run(cmd)
            if done.returncode:
                sys.exit(done.returncode)
    """
)


def _pods(tmp_path, args: list[str], runs: int = 1) -> list[subprocess.Popen]:
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(WRAPPER)
    port = str(free_port())
    env = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RUNS": str(runs)}
    ranks = [{**env, "RANK": str(r)} for r in range(2)]
    return start_ranks([sys.executable, str(wrapper), *args], tmp_path, ranks)


def test_the_seeds_kubernetes_wrapper_trains_in_the_launchers_group(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "pods", "--batch-size", "8", "--n-epochs", "1")
    outputs = wait_all(_pods(tmp_path, args))
    assert not any("Traceback" in out for out in outputs), outputs
    assert "held by the launcher's own process group" in outputs[0], outputs[0][-2000:]
    assert "2 processes (env launch)" in outputs[0]
    check_two_rank_run(tmp_path / "pods", steps_per_epoch=3, epochs=1)


def test_a_wrapper_that_runs_the_trainer_twice_meets_afresh_each_time(tiny_dataset, tmp_path):
    args = train_args(tiny_dataset, tmp_path, "twice", "--batch-size", "8", "--n-epochs", "1")
    outputs = wait_all(_pods(tmp_path, args, runs=2))
    assert not any("Traceback" in out for out in outputs), outputs
    assert "continue_train: resumed from" in outputs[0], outputs[0][-2000:]
    check_two_rank_run(tmp_path / "twice", steps_per_epoch=3, epochs=2)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_a_port_held_by_another_training_job_is_refused_in_one_line(tiny_dataset, tmp_path):
    port = str(free_port())
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
    first_args = train_args(tiny_dataset, tmp_path, "first", "--n-epochs", "1")
    first = subprocess.Popen(  # its rank 0 serves the port while it waits for rank 1
        trainer_cmd("train", *first_args),
        cwd=tmp_path,
        env=clean_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: _listening(int(port)) or first.poll() is not None, timeout=60)
        assert first.poll() is None, first.communicate()[1][-3000:]
        second = subprocess.run(
            trainer_cmd("train", *train_args(tiny_dataset, tmp_path, "second")),
            cwd=tmp_path,
            env=clean_env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == ExitCode.USAGE, second.stderr[-3000:]
        assert "Traceback" not in second.stderr, second.stderr[-3000:]
        assert second.stderr.strip().splitlines()[-1] == (
            f"trainer train: error: MASTER_PORT {port} on 127.0.0.1 is already used by another "
            "training job: give this job another MASTER_PORT"
        )
        assert first.poll() is None  # the first job is untouched
    finally:
        first.kill()
        first.communicate()


def test_a_rank_waiting_for_absent_ranks_stops_at_once_and_leaves_the_name_free(
    tiny_dataset, tmp_path
):
    """Rank 0 of 2, the other never started: a scheduler's SIGTERM (then Ctrl-C on a second
    try under the same --name) ends the wait at once, not after the rendezvous timeout."""
    log = tmp_path / "alone" / "loss_log.txt"  # the second try appends to the first's
    cmd = trainer_cmd("train", *train_args(tiny_dataset, tmp_path, "alone"))

    def waiting(proc: subprocess.Popen, tries: int) -> bool:
        said = log.exists() and log.read_text().count("waiting for 1 of 2 ranks") == tries
        return said or proc.poll() is not None

    for tries, (signum, code, said) in enumerate(
        [
            (signal.SIGTERM, ExitCode.TERMINATED, "terminated"),
            (signal.SIGINT, ExitCode.INTERRUPTED, "interrupted"),
        ],
        start=1,
    ):
        env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}
        proc = subprocess.Popen(
            cmd,
            cwd=tmp_path,
            env=clean_env(**env, MASTER_PORT=str(free_port())),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(functools.partial(waiting, proc, tries), timeout=120)
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            proc.send_signal(signum)
            err = proc.communicate(timeout=EXIT_WAIT_S)[1]
        finally:
            reap(proc)
        assert proc.returncode == code, err[-3000:]
        assert "Traceback" not in err and err.strip().endswith(f"trainer train: {said}"), err
