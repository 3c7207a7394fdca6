"""Starting local workers and gathering rank 0's result (trainer.training.spawn), with small worker functions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch
import torch.distributed as dist

from run_core.launch_env import LaunchError
from trainer.training import spawn, start_method
from trainer.training.spawn import WorkerError, launch
from trainer.training.start_method import (
    CudaForkError,
    UnpicklableArgumentError,
    choose_start_method,
    pickle_arguments,
)

# --- worker functions (module level, so spawned workers can import them) ----------------


def allreduce_worker(offset: int) -> dict:
    """Join the process group from the launcher environment and sum ``rank + offset``."""
    dist.init_process_group("gloo")
    try:
        value = torch.tensor([float(dist.get_rank() + offset)])
        dist.all_reduce(value)
        return {
            "sum": value.item(),
            "rank": dist.get_rank(),
            "world": dist.get_world_size(),
            "local_rank": int(os.environ["LOCAL_RANK"]),
            "master": (os.environ.get("MASTER_ADDR"), os.environ.get("WORLD_SIZE")),
            "threads": torch.get_num_threads(),
            "tensor": torch.arange(3.0),
        }
    finally:
        dist.destroy_process_group()


def failing_worker(bad_rank: int) -> None:
    if int(os.environ["RANK"]) == bad_rank:
        raise ValueError(f"boom on rank {bad_rank}")
    time.sleep(60)  # the launcher must stop this one when the other fails


def port_taking_worker(holder_dir: str) -> int:
    """Fail like a rank 0 whose MASTER_PORT was taken, the first time only."""
    marker = os.path.join(holder_dir, "tried")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError(
            "The server socket has failed to listen on any local network address. "
            "port: 1234, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"
        )
    return int(os.environ["MASTER_PORT"])


def dying_worker() -> None:
    if os.environ["RANK"] == "1":
        os._exit(7)
    time.sleep(60)


def sleeping_worker(pid_dir: str) -> None:
    open(os.path.join(pid_dir, str(os.getpid())), "w").close()
    time.sleep(60)


def bound_objects_worker(model, optimizer, scheduler) -> dict:
    """Report whether the optimizer and scheduler still refer to this worker's model."""
    return {
        "bound": optimizer.param_groups[0]["params"][0] is model.weight,
        "scheduler_bound": scheduler.optimizer is optimizer,
        "lr": optimizer.param_groups[0]["lr"],
    }


def _make_closure():
    scale = 2

    def scaled(x):
        return x * scale

    return scaled


def module_level_fn(x):
    return x


class NotebookModel(torch.nn.Module):
    """Stands in for a class defined in a notebook cell (its module is made ``__main__``)."""


# --- launching ------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_launch_runs_a_process_group_and_returns_rank0_result(method):
    result = launch(allreduce_worker, {"offset": 10}, nprocs=2, start_method=method)
    assert result["sum"] == 10 + 11
    assert (result["rank"], result["world"], result["local_rank"]) == (0, 2, 0)
    assert result["master"] == ("127.0.0.1", "2")
    assert result["threads"] == max(1, len(os.sched_getaffinity(0)) // 2)
    assert torch.equal(result["tensor"], torch.arange(3.0))


@pytest.mark.integration
def test_spawned_objects_keep_optimizer_bound_to_the_model():
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [3, 6])
    args = {"model": model, "optimizer": optimizer, "scheduler": scheduler}
    result = launch(bound_objects_worker, args, nprocs=1, start_method="spawn")
    assert result == {"bound": True, "scheduler_bound": True, "lr": 0.05}


@pytest.mark.integration
def test_worker_exception_names_rank_and_stops_the_others(monkeypatch):
    monkeypatch.setattr(spawn, "_GRACE_SECONDS", 0.5)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="boom on rank 1") as info:
        launch(failing_worker, {"bad_rank": 1}, nprocs=2, start_method="fork")
    assert info.value.rank == 1
    assert "worker rank 1 failed" in str(info.value)
    assert time.monotonic() - start < 30  # the sleeping rank 0 was stopped, not waited for


@pytest.mark.integration
def test_taken_port_is_retried_with_another(tmp_path, monkeypatch):
    monkeypatch.setattr(spawn, "_GRACE_SECONDS", 0.5)
    assert (
        launch(port_taking_worker, {"holder_dir": str(tmp_path)}, nprocs=1, start_method="fork") > 0
    )
    assert (tmp_path / "tried").exists()


@pytest.mark.integration
def test_worker_dying_without_exception_is_reported(monkeypatch):
    monkeypatch.setattr(spawn, "_GRACE_SECONDS", 0.5)
    with pytest.raises(
        WorkerError, match=r"worker rank 1 died \(terminated with exit code 7\).*its own output"
    ):
        launch(dying_worker, {}, nprocs=2, start_method="fork")


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="needs signals"
)
@pytest.mark.integration
def test_interrupt_in_caller_stops_the_workers(tmp_path):
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            launch(sleeping_worker, {"pid_dir": str(tmp_path)}, nprocs=2, start_method="fork")
    finally:
        timer.cancel()
    pids = [int(p.name) for p in tmp_path.iterdir()]
    assert len(pids) == 2
    for pid in pids:  # reaped children: signalling them fails
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


UNGUARDED_SCRIPT = """
import os
from trainer.training import spawn, start_method

def work():
    return os.getpid()

print("TOP LEVEL RUN", flush=True)
spawn.launch(work, {}, nprocs=2, start_method="spawn")  # not under `if __name__ == "__main__":`
"""


@pytest.mark.integration
def test_unguarded_script_fails_clearly_instead_of_training_again(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED_SCRIPT)
    root = os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    )
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    assert proc.stdout.count("TOP LEVEL RUN") == 3  # the script, then each worker importing it
    assert 'under `if __name__ == "__main__":`' in proc.stderr
    assert "spawned worker was importing your script" in proc.stderr  # the worker's own error
    assert "WorkerError: worker rank" in proc.stderr  # the caller's


# --- checks before any worker starts ------------------------------------------------------


@pytest.mark.integration
def test_unpicklable_lambda_names_the_argument_before_starting(monkeypatch):
    def no_start(*args, **kwargs):
        raise AssertionError("a worker was started")

    monkeypatch.setattr(torch.multiprocessing, "start_processes", no_start)
    with pytest.raises(UnpicklableArgumentError, match="argument 'dataset_fn'") as info:
        launch(
            module_level_fn, {"x": 1, "dataset_fn": lambda: None}, nprocs=2, start_method="spawn"
        )
    assert info.value.argument == "dataset_fn"
    assert "dataset function defined at module level" in str(info.value)
    assert "start_method='fork'" in str(info.value)


def test_unpicklable_entry_of_a_dict_and_closure_are_named():
    with pytest.raises(UnpicklableArgumentError, match=r"argument \"datasets\['valid'\]\""):
        pickle_arguments({"datasets": {"train": [1, 2], "valid": [lambda: 0]}}, interactive=False)
    with pytest.raises(UnpicklableArgumentError, match="argument 'criterion'.*local object"):
        pickle_arguments(
            {"model": torch.nn.Linear(1, 1), "criterion": _make_closure()}, interactive=False
        )


def test_notebook_definitions_are_refused_for_spawn(monkeypatch):
    main = sys.modules["__main__"]
    monkeypatch.setattr(NotebookModel, "__module__", "__main__")
    monkeypatch.setattr(main, "NotebookModel", NotebookModel, raising=False)
    args = {"model": NotebookModel(), "x": 1}
    assert pickle_arguments(args, interactive=False)  # a script's __main__ is importable
    with pytest.raises(UnpicklableArgumentError, match="argument 'model'.*NotebookModel.*notebook"):
        pickle_arguments(args, interactive=True)


def test_start_method_choice(monkeypatch):
    assert choose_start_method("auto") == "spawn"  # pytest's __main__ is a file
    monkeypatch.setattr(start_method, "in_interactive_session", lambda: True)
    assert choose_start_method("auto") == "fork"
    assert choose_start_method("auto", uses_cuda=True) == "fork"  # CPU torch: nothing initialised
    with pytest.raises(LaunchError, match="start_method must be one of"):
        choose_start_method("threads")


def test_fork_refused_when_cuda_is_initialised(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    assert not start_method.cuda_usable_after_fork()
    with pytest.raises(CudaForkError, match="restart the kernel"):
        choose_start_method("fork", uses_cuda=True)
    assert choose_start_method("fork", uses_cuda=False) == "fork"  # CPU workers are fine


def test_interactive_detection(monkeypatch):
    assert not start_method.in_interactive_session()
    fake_main = type(sys)("__main__")  # like ipykernel's: no __file__
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    assert start_method.in_interactive_session()
