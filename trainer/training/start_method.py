"""How local DDP workers start: the start method, and the pickled arguments spawned workers get.

* ``spawn`` from a script, ``fork`` in a notebook or REPL, where spawned workers
  could not import what the notebook defined;
* ``fork`` is refused when the workers need CUDA and this process already
  initialised it (a forked child can not use CUDA then), saying what to do;
* under ``spawn`` the arguments are pickled *before* any worker starts, so an
  unpicklable lambda or closure is reported by argument name.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
from collections.abc import Mapping
from typing import Any

from run_core.launch_env import LaunchError

START_METHODS = ("auto", "spawn", "fork", "forkserver")


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
    '(`python train.py` with the call under `if __name__ == "__main__":`, or torchrun), or pass '
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
    'under `if __name__ == "__main__":` (spawned workers import the script to find its functions '
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
            raise LaunchError(
                "start_method='fork' is not available on Windows; use 'spawn' from a script"
            )
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
        by_reference = isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__"))
        if by_reference and getattr(obj, "__module__", None) == "__main__":
            self.main_refs.append(getattr(obj, "__qualname__", repr(obj)))
        return


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
                    label,
                    f"it refers to {err} defined in this notebook or REPL (__main__), "
                    "which spawned workers can not import; move the definition to a .py module",
                ) from None
            except Exception as err:
                raise UnpicklableArgumentError(label, _describe(err)) from err
    raise UnpicklableArgumentError(", ".join(arguments), _describe(whole)) from whole
