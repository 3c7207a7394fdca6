"""Start local DDP workers from a script or a notebook and bring rank 0's result back.

This module only manages processes; what the workers run is up to the caller
(``trainer.api`` runs the shared training loop in them). It:

* picks the start method: ``spawn`` from a script, ``fork`` in a notebook or
  REPL, where spawned workers could not import what the notebook defined;
* refuses ``fork`` when the workers need CUDA and the caller's process already
  initialised it (a forked child can not use CUDA then), saying what to do;
* pickles the workers' arguments *before* starting any worker under ``spawn``,
  so an unpicklable lambda or closure is reported by argument name;
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
from pathlib import Path
from typing import Any, Callable, Mapping

log = logging.getLogger(__name__)

START_METHODS = ("auto", "spawn", "fork", "forkserver")

# Seconds a failed run's other workers get to exit by themselves before SIGTERM.
_GRACE_SECONDS = 5.0
# Tries with a fresh MASTER_PORT when the chosen one was taken in the meantime.
_PORT_ATTEMPTS = 3

# Set in the workers so the launched code knows it was started here, not by torchrun.
SPAWNED_ENV = "TRAINER_SPAWNED"

# Launcher variables of the caller's environment that would contradict the ones
# set for the workers (a 1-task Slurm allocation, say); workers do not inherit them.
_LAUNCHER_VARS = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS",
                  "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
                  "GROUP_RANK", "TORCHELASTIC_RUN_ID")


class LaunchError(RuntimeError):
    """Workers could not be started with the given arguments; nothing was started."""


class UnpicklableArgumentError(LaunchError, TypeError):
    """An argument can not be sent to spawned workers."""

    def __init__(self, argument: str, detail: str) -> None:
        self.argument = argument
        super().__init__(
            f"argument {argument!r} can not be sent to spawned worker processes: {detail}. "
            "Workers started with 'spawn' receive their arguments pickled: define functions and "
            "classes at module level (not lambdas or functions nested in other functions), and pass "
            "a dataset function defined at module level (dataset_fn=make_datasets) instead of "
            "datasets that hold lambdas or open files; or start the workers with "
            "start_method='fork' (Linux, and CUDA not yet used in this process), which sends nothing."
        )


class CudaForkError(LaunchError):
    """Forked workers would need CUDA, but this process already initialised it."""


class WorkerError(RuntimeError):
    """A worker failed; the message holds its rank and traceback."""

    def __init__(self, rank: int, message: str) -> None:
        self.rank = rank
        super().__init__(message)


# --- choosing how to start ---------------------------------------------------------


def in_interactive_session() -> bool:
    """True in a Jupyter kernel, IPython or the plain REPL: ``__main__`` is no importable file.

    Spawned workers re-import the caller's ``__main__`` from its file to find what
    it defined; without a file (a notebook's cells) they can not.
    """
    main = sys.modules.get("__main__")
    if main is None or not getattr(main, "__file__", None):
        return True
    # ipykernel normally replaces __main__ with a file-less module; check the shell too.
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    return bool(get_ipython and get_ipython() is not None)


_CUDA_FORK_ADVICE = (
    "CUDA was already used in this process (initialised, or queried by torch.cuda.is_available()), "
    "so workers started with 'fork' can not use the GPU. In a notebook: restart the kernel and call trainer.fit(..., ddp=True) before "
    "anything touches CUDA (keep the model on the CPU, the workers move it to their GPU; use "
    "torch.cuda.device_count() rather than torch.cuda.is_available(), or set "
    "PYTORCH_NVML_BASED_CUDA_CHECK=1 before importing torch). Or run the training from a script "
    "(`python train.py` with the call under `if __name__ == \"__main__\":`, or torchrun), or pass "
    "start_method='spawn' with the model, dataset function etc. defined in an importable .py module."
)


def _exit_if_cuda_unusable() -> None:  # pragma: no cover - runs in the probe child
    import torch

    os._exit(3 if torch.cuda._is_in_bad_fork() else 0)


def cuda_usable_after_fork() -> bool:
    """Whether a forked child of this process could initialise CUDA.

    ``torch.cuda.is_initialized()`` misses the common case of a notebook that only
    called ``torch.cuda.is_available()``, which already makes forked children
    unable to use CUDA; a probe child asks torch itself (a few milliseconds).
    """
    import multiprocessing

    import torch

    if torch.cuda.is_initialized():
        return False
    probe = multiprocessing.get_context("fork").Process(target=_exit_if_cuda_unusable, daemon=True)
    probe.start()
    probe.join()
    return probe.exitcode == 0


_UNGUARDED_SCRIPT = (
    "workers were about to be started while a spawned worker was importing your script, so the "
    "script's top level is starting training itself. Put the code that builds and trains the model "
    "under `if __name__ == \"__main__\":` (spawned workers import the script to find its functions "
    "and classes, and must not run its training code)"
)


def _check_not_bootstrapping() -> None:
    """Refuse to start workers from a spawned child that is still importing ``__main__``.

    multiprocessing checks the same private flag for its own processes; here it
    also has to cover fork, which it does not check, and the file-less
    ``__mp_main__`` would otherwise pass for a notebook and pick fork.
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise LaunchError(_UNGUARDED_SCRIPT)


def choose_start_method(requested: str = "auto", *, uses_cuda: bool = False) -> str:
    """Resolve ``requested`` (one of :data:`START_METHODS`) for this process.

    ``auto`` is ``fork`` in an interactive session and ``spawn`` elsewhere: spawn
    is the start method that is safe with threads and CUDA in the caller, but a
    notebook's definitions are not importable by spawned workers.
    Raises :class:`CudaForkError` when forked workers would need CUDA and can not have it.
    """
    if requested not in START_METHODS:
        raise LaunchError(f"start_method must be one of {START_METHODS}, not {requested!r}")
    _check_not_bootstrapping()
    method = requested
    if method == "auto":
        method = "fork" if in_interactive_session() else "spawn"
    if method == "fork":
        if sys.platform == "win32":
            raise LaunchError("start_method='fork' is not available on Windows; use 'spawn' from a script")
        if uses_cuda and not cuda_usable_after_fork():
            raise CudaForkError(_CUDA_FORK_ADVICE)
    return method


# --- sending arguments ---------------------------------------------------------------


class _MainRefPickler(pickle.Pickler):
    """A pickler that notes every class or function it refers to in ``__main__``."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.main_refs: list[str] = []

    def persistent_id(self, obj: Any) -> None:
        # Called for every object pickled; classes and functions are pickled by
        # reference, and a reference into a file-less __main__ can not be resolved
        # in a spawned worker.
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            if getattr(obj, "__module__", None) == "__main__":
                self.main_refs.append(getattr(obj, "__qualname__", repr(obj)))
        return None


def _dumps(obj: Any, check_main: bool) -> bytes:
    buffer = io.BytesIO()
    if not check_main:
        pickle.dump(obj, buffer, protocol=pickle.HIGHEST_PROTOCOL)
        return buffer.getvalue()
    pickler = _MainRefPickler(buffer)
    pickler.dump(obj)
    if pickler.main_refs:
        names = ", ".join(sorted(set(pickler.main_refs)))
        raise _MainReference(names)
    return buffer.getvalue()


class _MainReference(Exception):
    """Raised by :func:`_dumps` for references into an interactive ``__main__``."""


def _describe(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    return f"{type(err).__name__}: {text}"


def pickle_arguments(arguments: Mapping[str, Any], *, interactive: bool | None = None) -> bytes:
    """Pickle ``arguments`` as one object so shared references stay shared.

    One pickle keeps an optimizer bound to the model's parameters (and a
    scheduler to its optimizer) in the worker, exactly as in the caller. On
    failure each argument (and each entry of a dict argument) is tried alone to
    name the culprit in an :class:`UnpicklableArgumentError`.
    """
    check_main = in_interactive_session() if interactive is None else interactive
    try:
        return _dumps(dict(arguments), check_main)
    except Exception as err:  # find which argument it was
        whole = err
    for name, value in arguments.items():
        parts = value.items() if isinstance(value, Mapping) else [(None, value)]
        for key, part in parts:
            label = name if key is None else f"{name}[{key!r}]"
            try:
                _dumps(part, check_main)
            except _MainReference as err:
                raise UnpicklableArgumentError(
                    label, f"it refers to {err} defined in this notebook or REPL (__main__), "
                    "which spawned workers can not import; move the definition to a .py module"
                ) from None
            except Exception as err:
                raise UnpicklableArgumentError(label, _describe(err)) from err
    raise UnpicklableArgumentError(", ".join(arguments), _describe(whole)) from whole


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
        **{SPAWNED_ENV: "1"},
    )
    if not logging.getLogger().handlers:  # spawned: the caller's logging setup is not inherited
        logging.basicConfig(level=log_level, format=f"[rank {local_rank}] %(levelname)s %(name)s: %(message)s")
    import torch

    # N workers each using every core would oversubscribe the CPU (torchrun sets
    # OMP_NUM_THREADS=1 for the same reason); share the cores out instead.
    torch.set_num_threads(threads)
    if isinstance(arguments, bytes):
        # Unpickling drops the wrapper an LR scheduler puts around optimizer.step,
        # which only makes torch warn that step was "overridden"; the order is checked
        # by the training loop itself.
        warnings.filterwarnings("ignore", message=r"Seems like `optimizer.step\(\)` has been overridden")
        arguments = pickle.loads(arguments)
    try:
        result = fn(**arguments)
        if local_rank == 0:
            # Written to a file, not a queue: a large state dict in a pipe would block
            # this worker until the caller reads it, while the caller waits for the exit.
            tmp = f"{result_path}.tmp"
            torch.save(result, tmp)
            os.replace(tmp, result_path)
        code = 0
    except BaseException:
        with open(_error_path(result_path, local_rank), "w", encoding="utf-8") as out:
            out.write(traceback.format_exc())
        code = 1
    # Leave without interpreter teardown: what the worker wrote is closed and on disk, and
    # tearing down objects such as a gloo process group can hang (see trainer.api).
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
        plain = open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
        setattr(sys, name, plain)
        replaced[id(current)] = plain
    if not replaced:
        return
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
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
    import torch
    import torch.multiprocessing as mp

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
        log.info("starting %d worker(s) with %r (rendezvous on 127.0.0.1:%d, %d thread(s) each)",
                 nprocs, method, port, threads)
        with tempfile.TemporaryDirectory(prefix="trainer-launch-") as tmp:
            result_path = str(Path(tmp) / "result.pt")
            context = mp.start_processes(
                _worker, args=(fn, payload, nprocs, port, result_path, threads, level),
                nprocs=nprocs, join=False, start_method=method,
            )
            try:
                _join(context, result_path)
            except WorkerError as err:
                # The port was free when chosen, but another process may take it before
                # rank 0 listens on it; the group never formed, so nothing trained yet.
                if attempt < _PORT_ATTEMPTS and _port_taken(str(err)):
                    log.warning("port %d was taken before the workers could use it; retrying", port)
                    continue
                raise
            if not os.path.exists(result_path):
                raise WorkerError(0, "rank 0 finished without writing its result")
            # Our own file from our own child in a private temp dir: full unpickling is safe here.
            return torch.load(result_path, map_location="cpu", weights_only=False)
    raise AssertionError("unreachable")


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
        raise WorkerError(err.error_index, f"worker rank {err.error_index} failed:{err.msg}") from None
    except ProcessExitedException as err:
        error_file = Path(_error_path(result_path, err.error_index))
        if error_file.exists():
            raise WorkerError(err.error_index, f"worker rank {err.error_index} failed:\n\n"
                              f"{error_file.read_text(encoding='utf-8')}") from None
        how = err.msg.split(" ", 2)[-1]  # "terminated with signal SIGKILL" / "... exit code 1"
        if err.signal_name:
            why = ("out of memory (the kernel's OOM killer), a crash in native code, or a signal "
                   "from outside")
        else:
            why = ("its own output above says why; a script that starts training at its top level, "
                   "not under `if __name__ == \"__main__\":`, fails this way")
        raise WorkerError(err.error_index, f"worker rank {err.error_index} died ({how}) without a "
                          f"Python traceback: {why}") from None
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
