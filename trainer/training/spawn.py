"""Start local DDP workers from a script or a notebook and bring rank 0's result back.

This module only manages processes; what the workers run is up to the caller
(:func:`trainer.fit` runs the training loop in them). It:

* starts them as :mod:`trainer.training.start_method` decides, with arguments it pickled first;
* gives every worker the environment a launcher would (``RANK``, ``WORLD_SIZE``,
  ``MASTER_ADDR``/``MASTER_PORT`` on a free loopback port, ...), so the
  process-group setup is the same code as under torchrun;
* returns what rank 0's function returned, and stops all workers when one fails
  or the caller is interrupted (a notebook's "interrupt kernel").
"""

from __future__ import annotations

import io
import logging
import os
import pickle
import socket
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from run_core.launch_env import LaunchError
from trainer.training import checkpoint
from trainer.training.start_method import choose_start_method, pickle_arguments

log = logging.getLogger(__name__)

# Seconds a failed run's other workers get to exit by themselves before SIGTERM.
_GRACE_SECONDS = 5.0
# Tries with a fresh MASTER_PORT when the chosen one was taken in the meantime.
_PORT_ATTEMPTS = 3

# Launcher variables of the caller's environment that would contradict the ones
# set for the workers (a 1-task Slurm allocation, say); workers do not inherit them.
_LAUNCHER_VARS = (
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "GROUP_RANK",
    "TORCHELASTIC_RUN_ID",
)


class WorkerError(RuntimeError):
    """A worker failed; the message holds its rank and traceback."""

    def __init__(self, rank: int, message: str) -> None:
        self.rank = rank
        super().__init__(message)


# --- the workers ---------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that was free a moment ago (for ``MASTER_PORT``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _worker(
    local_rank: int,
    fn: Callable[..., Any],
    arguments: Mapping[str, Any] | bytes,
    nprocs: int,
    port: int,
    result_path: str,
    threads: int,
    log_level: int,
) -> None:
    """Entry point of one worker: launcher environment, arguments, ``fn``, rank 0's result."""
    if not isinstance(arguments, bytes):  # forked
        _use_plain_std_streams()
    for var in _LAUNCHER_VARS:
        os.environ.pop(var, None)
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(local_rank),
        LOCAL_RANK=str(local_rank),
        WORLD_SIZE=str(nprocs),
        LOCAL_WORLD_SIZE=str(nprocs),
    )
    if not logging.getLogger().handlers:  # spawned: the caller's logging setup is not inherited
        logging.basicConfig(
            level=log_level, format=f"[rank {local_rank}] %(levelname)s %(name)s: %(message)s"
        )
    import torch

    # N workers each using every core would oversubscribe the CPU (torchrun sets
    # OMP_NUM_THREADS=1 for the same reason); share the cores out instead.
    torch.set_num_threads(threads)
    if isinstance(arguments, bytes):  # spawned
        # Unpickling drops the wrapper an LR scheduler puts around optimizer.step,
        # which only makes torch warn that step was "overridden"; the order is checked
        # by the training loop itself.
        warnings.filterwarnings(
            "ignore", message=r"Seems like `optimizer.step\(\)` has been overridden"
        )
    kwargs = pickle.loads(arguments) if isinstance(arguments, bytes) else arguments
    try:
        result = fn(**kwargs)
        if local_rank == 0:
            # Written to a file, not a queue: a large state dict in a pipe would block
            # this worker until the caller reads it, while the caller waits for the exit.
            checkpoint.save_whole(result, Path(result_path))
        code = 0
    except BaseException:
        with open(_error_path(result_path, local_rank), "w", encoding="utf-8") as out:
            out.write(traceback.format_exc())
        code = 1
    # Leave without interpreter teardown: what the worker wrote is closed and on disk, and
    # tearing down objects such as a gloo process group can hang (see trainer.training.session).
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


def _error_path(result_path: str, rank: int) -> str:
    return f"{result_path}.rank{rank}.error"


def _use_plain_std_streams() -> None:
    """In a forked worker, write to file descriptors 1 and 2 directly, not through the parent's streams.

    In a Jupyter kernel ``sys.stdout``/``sys.stderr`` are ipykernel streams whose
    lock may be held by one of the kernel's threads at the moment of the fork;
    that thread does not exist in the child, so the child's first write or its
    final flush at exit would wait forever (seen as a worker that never exits).
    Fresh file objects on the descriptors have fresh locks, and the kernel
    forwards whatever reaches the descriptors to the notebook.
    """
    replaced: dict[int, io.TextIOBase] = {}
    for name, fd in (("stdout", 1), ("stderr", 2)):
        current = getattr(sys, name)
        if isinstance(current, io.TextIOWrapper) or current is None:
            continue  # a plain file: nothing of the parent's machinery behind it
        # Kept open for the worker's life: it replaces sys.stdout/sys.stderr.
        plain = open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
        setattr(sys, name, plain)
        replaced[id(current)] = plain
    if not replaced:
        return
    loggers = [
        logging.getLogger(),
        *(
            lg
            for lg in logging.Logger.manager.loggerDict.values()
            if isinstance(lg, logging.Logger)
        ),
    ]
    for logger in loggers:
        for handler in logger.handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and id(stream) in replaced:
                handler.stream = replaced[id(stream)]  # not setStream: it would flush the old one


def launch(
    fn: Callable[..., Any],
    arguments: Mapping[str, Any],
    *,
    nprocs: int,
    start_method: str = "auto",
    uses_cuda: bool = False,
) -> Any:
    """Run ``fn(**arguments)`` in ``nprocs`` local workers; return rank 0's return value.

    ``fn`` must be importable (module level). Each worker finds ``RANK``,
    ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and
    ``MASTER_PORT`` set, as under torchrun, and sets up its process group
    itself. Rank 0's return value comes back through ``torch.save``/``torch.load``
    (tensors mapped to the CPU, so the caller never initialises CUDA).

    Raises :class:`LaunchError` (nothing started) for bad arguments,
    :class:`WorkerError` when a worker fails; the other workers are then stopped.
    """
    if nprocs < 1:
        raise LaunchError(f"nprocs must be at least 1, not {nprocs}")
    method = choose_start_method(start_method, uses_cuda=uses_cuda)
    # Under fork the workers inherit the objects themselves; nothing is pickled.
    payload: Mapping[str, Any] | bytes = (
        dict(arguments) if method == "fork" else pickle_arguments(arguments)
    )
    threads = max(1, _usable_cpus() // nprocs)
    level = logging.getLogger().getEffectiveLevel()
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = free_port()
        log.info(
            "starting %d worker(s) with %r (rendezvous on 127.0.0.1:%d, %d thread(s) each)",
            nprocs,
            method,
            port,
            threads,
        )
        try:
            return _run_workers(fn, payload, nprocs, method, port, threads, level)
        except WorkerError as err:
            # The port was free when chosen, but another process may take it before
            # rank 0 listens on it; the group never formed, so nothing trained yet.
            if attempt < _PORT_ATTEMPTS and _port_taken(str(err)):
                log.warning("port %d was taken before the workers could use it; retrying", port)
                continue
            raise
    raise AssertionError("unreachable")


def _run_workers(
    fn: Callable[..., Any],
    payload: Mapping[str, Any] | bytes,
    nprocs: int,
    method: str,
    port: int,
    threads: int,
    log_level: int,
) -> Any:
    """Start the workers once, rendezvous on ``port``; wait for all, return rank 0's result."""
    import torch
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="trainer-launch-") as tmp:
        result_path = str(Path(tmp) / "result.pt")
        context = mp.start_processes(
            _worker,
            args=(fn, payload, nprocs, port, result_path, threads, log_level),
            nprocs=nprocs,
            join=False,
            start_method=method,
        )
        _join(context, result_path)
        if not Path(result_path).exists():
            raise WorkerError(0, "rank 0 finished without writing its result")
        # Our own file from our own child in a private temp dir: full unpickling is safe here.
        return torch.load(result_path, map_location="cpu", weights_only=False)


def _usable_cpus() -> int:
    """CPUs this process may run on (the affinity mask, which containers and Slurm narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _port_taken(message: str) -> bool:
    text = message.lower()
    return "eaddrinuse" in text or "address already in use" in text


def _join(context: Any, result_path: str) -> None:
    """Wait for every worker; on failure or interrupt, stop the rest and raise."""
    from torch.multiprocessing import ProcessExitedException, ProcessRaisedException

    try:
        while not context.join(grace_period=_GRACE_SECONDS):
            pass
    except ProcessRaisedException as err:
        raise WorkerError(
            err.error_index, f"worker rank {err.error_index} failed:{err.msg}"
        ) from None
    except ProcessExitedException as err:
        error_file = Path(_error_path(result_path, err.error_index))
        if error_file.exists():
            raise WorkerError(
                err.error_index,
                f"worker rank {err.error_index} failed:\n\n"
                f"{error_file.read_text(encoding='utf-8')}",
            ) from None
        how = err.msg.split(" ", 2)[-1]  # "terminated with signal SIGKILL" / "... exit code 1"
        if err.signal_name:
            why = (
                "out of memory (the kernel's OOM killer), a crash in native code, or a signal "
                "from outside"
            )
        else:
            why = (
                "its own output above says why; a script that starts training at its top level, "
                'not under `if __name__ == "__main__":`, fails this way'
            )
        raise WorkerError(
            err.error_index,
            f"worker rank {err.error_index} died ({how}) without a Python traceback: {why}",
        ) from None
    except BaseException:
        # KeyboardInterrupt in the caller (a notebook's interrupt button) does not
        # reach the workers; without this they would train on, orphaned.
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(_GRACE_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()
        raise
