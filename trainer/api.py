"""``trainer.fit``: train your own model with one call, DDP included (the Catalyst/Sapsan way).

::

    result = trainer.fit(model, nn.MSELoss(), optimizer, datasets={"train": ..., "valid": ...},
                         batch_size=32, num_epochs=8, scheduler=scheduler, ddp=True)

This module adapts and launches; the training itself is :func:`trainer.loop.fit`,
the same loop as ``python -m trainer train``. Where it runs:

* under torchrun, Slurm (``srun``) or a Kubernetes launcher (``RANK``/``WORLD_SIZE``
  set): in this process, joining the job's process group; nothing is started;
* ``ddp=False``, or ``ddp=True`` with a single process to run: in this process;
* ``ddp=True`` otherwise: :mod:`trainer.spawn` starts one worker per GPU (or
  ``nprocs`` CPU workers with gloo), each runs the loop, and rank 0's weights,
  optimizer and scheduler state come back into the caller's objects.

Everything that can be checked is checked in the caller before any worker starts.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from typing import Any, Callable, Mapping, Sequence

import torch
from torch import nn

from . import distributed, loop, spawn
from .loop import FitResult

log = logging.getLogger(__name__)

__all__ = ["FitInputError", "FitResult", "fit"]

Datasets = Mapping[str, Any]

# CPU workers when ddp=True finds no GPU and nprocs is not given. Each worker
# already uses several cores through intra-op threads (they are shared out, see
# trainer.spawn), so more processes mostly add all-reduce traffic on one machine.
DEFAULT_CPU_PROCS = 2
# Samples of the first training batch run through the model in the caller as a check:
# 2, not 1, so BatchNorm in training mode does not fail on a batch that the loop would not see.
CHECK_SAMPLES = 2
VALID_SPLITS = ("valid", "val")

# Runner arguments that fit() sets itself; the rest pass through as **options.
_OWN_ARGUMENTS = {"model", "criterion", "optimizer", "datasets", "batch_size", "n_epochs",
                  "scheduler", "patience", "min_delta", "checkpoints_dir", "name", "remote",
                  "remote_transfer_cmd", "device", "continue_train", "seed", "env", "self"}


class FitInputError(ValueError):
    """An argument of :func:`fit` can not work; raised before any worker starts."""


def fit(
    model: nn.Module,
    criterion: Callable[[Any, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    *,
    datasets: Datasets | None = None,
    dataset_fn: Callable[[], Datasets] | None = None,
    batch_size: int,
    num_epochs: int,
    scheduler: Any = None,
    patience: int | None = None,
    min_delta: float = 0.0,
    checkpoints_dir: str | os.PathLike[str] = "./checkpoints",
    name: str = "experiment",
    remote: bool = True,
    remote_transfer_cmd: str | None = None,
    ddp: bool = False,
    nprocs: int | None = None,
    device: str | torch.device | Sequence[int] | None = "auto",
    start_method: str = "auto",
    continue_train: bool = False,
    seed: int = 0,
    **options: Any,
) -> FitResult:
    """Train ``model`` and return a :class:`~trainer.loop.FitResult`.

    Args:
        model: the model; after the call it holds the trained weights (also with ``ddp=True``).
        criterion: ``criterion(outputs, targets)`` returning the batch mean.
        optimizer: an optimizer over ``model.parameters()``. Workers get it pickled
            together with the model (or inherit it under fork), so it stays bound to
            their copy of the parameters; afterwards its state is loaded back here.
        datasets: ``{"train": ds, "valid": ds}`` of ``(input, target)`` samples ("val"
            is accepted for "valid").
        dataset_fn: instead of ``datasets``, a function returning them, called once in
            each worker so large data is not pickled to every process (and once here,
            to check it; make it cheap, e.g. datasets that read files lazily).
        batch_size: per process; with ``ddp=True`` the effective batch is ``batch_size * nprocs``.
        num_epochs: epochs to train (in total, counting those of a resumed run).
        scheduler: an LR scheduler of ``optimizer``, stepped once per epoch
            (``ReduceLROnPlateau`` with the monitored validation score).
        patience, min_delta: stop after ``patience`` epochs without a validation
            improvement of more than ``min_delta`` (None: never).
        checkpoints_dir, name: the run dir ``checkpoints_dir/name`` holds the snapshot
            store (``pickle/``), ``latest.pth``, ``best.pth`` and ``loss_log.txt``.
        remote: True (default) only writes the store, for a visualizer elsewhere;
            False also shows the plots live in a local visdom.
        remote_transfer_cmd: ``module.func`` handed every file written (rank 0).
        ddp: train with DistributedDataParallel; starts the workers itself unless a
            launcher (torchrun, Slurm, Kubernetes) already started this process.
        nprocs: workers for ``ddp=True``: default one per GPU, else
            :data:`DEFAULT_CPU_PROCS` CPU workers (gloo).
        device: ``"auto"`` (GPUs if any), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, or a list
            of GPU ids (one worker per id with ``ddp=True``).
        start_method: ``"auto"`` (``fork`` in a notebook or REPL, ``spawn`` in a
            script), ``"spawn"``, ``"fork"`` or ``"forkserver"``.
        continue_train: resume from ``latest.pth`` of the run dir.
        seed: rank ``r`` seeds ``seed + r``; the data order depends on ``seed`` only.
        **options: further :class:`trainer.loop.Runner` options (``metrics``,
            ``monitor``, ``mode``, ``print_freq``, ``amp``, ``num_workers``, ...).

    Raises:
        FitInputError: bad datasets, a model or criterion failing on one batch, more
            GPUs asked for than exist (all before any worker starts).
        trainer.spawn.UnpicklableArgumentError: an argument spawned workers can not receive.
        trainer.spawn.CudaForkError: forked GPU workers after CUDA was used here.
        trainer.spawn.WorkerError: a worker failed during training.
    """
    _check_options(options)
    _check_optimizer(model, optimizer, scheduler)
    if (datasets is None) == (dataset_fn is None):
        raise FitInputError("pass exactly one of datasets={'train': ..., 'valid': ...} or dataset_fn=...")
    if batch_size < 1 or num_epochs < 1:
        raise FitInputError(f"batch_size and num_epochs must be >= 1 (got {batch_size}, {num_epochs})")
    if remote_transfer_cmd:
        from transfer_plugins.runner import resolve_hook

        resolve_hook(remote_transfer_cmd)  # a bad spec fails here, not in rank 0 mid-start
    built = datasets if datasets is not None else _call_dataset_fn(dataset_fn)
    check_datasets(built)
    check_one_batch(model, criterion, built["train"])

    loop_args = dict(
        batch_size=batch_size, n_epochs=num_epochs, scheduler=scheduler, patience=patience,
        min_delta=min_delta, checkpoints_dir=checkpoints_dir, name=name, remote=remote,
        remote_transfer_cmd=remote_transfer_cmd, continue_train=continue_train, seed=seed,
        **options,
    )
    env = distributed.detect()
    if env.launcher != "none" and env.distributed and not ddp:
        log.info("launched as rank %d of %d (%s): training with DDP although ddp=False",
                 env.rank, env.world_size, env.launcher)
    if env.launcher != "none" and nprocs not in (None, env.world_size):
        log.warning("nprocs=%d ignored: the %s launcher started %d process(es)", nprocs,
                    env.launcher, env.world_size)
    if env.launcher != "none" or not ddp:
        return _fit_here(model, criterion, optimizer, built, device=_loop_device(device), env=env,
                         **loop_args)

    nprocs, gpu_ids = plan_workers(device, nprocs)
    if nprocs == 1:
        log.info("ddp=True with one process to run: training in this process")
        return _fit_here(model, criterion, optimizer, built, env=env,
                         device=gpu_ids if gpu_ids else "cpu", **loop_args)
    worker_args = {
        "model": model, "criterion": criterion, "optimizer": optimizer, "scheduler": scheduler,
        # With a dataset_fn the workers build their own data; only the function travels.
        "datasets": built if dataset_fn is None else None,
        "dataset_fn": dataset_fn,
        "loop_args": {**loop_args, "device": gpu_ids if gpu_ids else "cpu"},
    }
    del built  # the checked copy is not needed in this process any more
    outcome = spawn.launch(_train_worker, worker_args, nprocs=nprocs, start_method=start_method,
                           uses_cuda=bool(gpu_ids))
    return _adopt(outcome, model, optimizer, scheduler)


# --- checks, all in the caller ------------------------------------------------------------


def _check_options(options: Mapping[str, Any]) -> None:
    known = set(inspect.signature(loop.Runner.__init__).parameters) - _OWN_ARGUMENTS
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"fit() got unexpected option(s) {', '.join(map(repr, unknown))}; "
                        f"the loop also takes: {', '.join(sorted(known))}")


def _check_optimizer(model: nn.Module, optimizer: Any, scheduler: Any) -> None:
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise FitInputError(f"optimizer must be a torch.optim.Optimizer over model.parameters(), "
                            f"not {type(optimizer).__name__}")
    own = {id(p) for p in model.parameters()}
    if any(id(p) not in own for group in optimizer.param_groups for p in group["params"]):
        raise FitInputError("the optimizer holds parameters that are not the model's; build it "
                            "over model.parameters() (after moving the model, if you move it)")
    bound = getattr(scheduler, "optimizer", optimizer)
    if scheduler is not None and bound is not optimizer:
        raise FitInputError("the scheduler was built for another optimizer than the one passed")


def _call_dataset_fn(dataset_fn: Callable[[], Datasets]) -> Datasets:
    if not callable(dataset_fn):
        raise FitInputError(f"dataset_fn must be a function returning the datasets, not "
                            f"{type(dataset_fn).__name__}")
    return dataset_fn()


def check_datasets(datasets: Any) -> None:
    """Raise :class:`FitInputError` unless ``datasets`` has usable train and valid splits."""
    if not isinstance(datasets, Mapping):
        raise FitInputError(f"datasets must be a dict like {{'train': ds, 'valid': ds}}, not "
                            f"{type(datasets).__name__}")
    valid_key = next((k for k in VALID_SPLITS if k in datasets), None)
    missing = [k for k, present in (("train", "train" in datasets), ("valid", valid_key)) if not present]
    if missing:
        raise FitInputError(
            f"datasets has no {' and no '.join(map(repr, missing))} split (it has "
            f"{sorted(map(str, datasets)) or 'nothing'}); pass {{'train': ..., 'valid': ...}}: "
            "the validation split drives the best checkpoint and early stopping")
    extra = sorted(set(map(str, datasets)) - {"train", *VALID_SPLITS})
    if extra:
        log.warning("datasets: split(s) %s are not used by fit (only 'train' and 'valid')", extra)
    for split in ("train", valid_key):
        ds = datasets[split]
        if not (hasattr(ds, "__len__") and hasattr(ds, "__getitem__")):
            raise FitInputError(f"datasets[{split!r}] must be a map-style dataset (with __len__ and "
                                f"__getitem__), not {type(ds).__name__}")
        if len(ds) == 0:
            raise FitInputError(f"datasets[{split!r}] is empty")
        sample = ds[0]
        if not (isinstance(sample, (tuple, list)) and len(sample) == 2):
            raise FitInputError(f"datasets[{split!r}][0] must be an (input, target) pair, not "
                                f"{_shapes(sample)}")


def _shapes(value: Any) -> str:
    """``float32[2, 10]``-style description of tensors, tuples and dicts, for messages."""
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}[{', '.join(map(str, value.shape))}]"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_shapes(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_shapes(v)}" for k, v in value.items()) + "}"
    return type(value).__name__


def check_one_batch(model: nn.Module, criterion: Callable[[Any, Any], torch.Tensor], train: Any) -> None:
    """Run model and criterion on a batch of the first training samples; report failures with shapes.

    Runs where the model is (normally the CPU: the caller must not touch CUDA
    before forked workers start), in training mode as the loop will, without
    gradients; buffers (BatchNorm statistics) and the RNG are left as they were.
    """
    from torch.utils.data import default_collate

    samples = [train[i] for i in range(min(CHECK_SAMPLES, len(train)))]
    try:
        inputs, targets = default_collate(samples)
    except Exception as err:
        raise FitInputError(f"the first training samples do not stack into a batch "
                            f"({_shapes(samples[0])}): {type(err).__name__}: {err}") from err
    where = next(model.parameters(), torch.empty(0)).device
    inputs, targets = inputs.to(where), targets.to(where)
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    stage, outputs = "model", None
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            outputs = model(inputs)
            stage = "criterion"
            loss = criterion(outputs, targets)
    except Exception as err:
        shown = (f"inputs {_shapes(inputs)}" if stage == "model"
                 else f"model outputs {_shapes(outputs)}") + f", targets {_shapes(targets)}"
        raise FitInputError(f"the {stage} failed on one batch of {len(samples)} training samples "
                            f"({shown}): {type(err).__name__}: {err}") from err
    finally:
        for buffer, saved in buffers:
            buffer.copy_(saved)
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise FitInputError(f"the criterion must return the batch mean as a scalar tensor, got "
                            f"{_shapes(loss)} for model outputs {_shapes(outputs)}, targets "
                            f"{_shapes(targets)} (a loss with reduction='none'?)")


def plan_workers(device: Any, nprocs: int | None) -> tuple[int, list[int]]:
    """``(number of workers, GPU ids; [] for CPU workers)`` for ``ddp=True`` without a launcher.

    Counts GPUs with ``torch.cuda.device_count()``, which (through NVML) leaves
    CUDA uninitialised here so forked workers can still use it.
    """
    if nprocs is not None and nprocs < 1:
        raise FitInputError(f"nprocs must be at least 1, not {nprocs}")
    available = torch.cuda.device_count()
    if isinstance(device, (list, tuple)):
        ids = [int(i) for i in device]
        if ids == [-1]:
            ids = []
    else:
        dev = torch.device("cuda" if device in (None, "auto") and available else
                           "cpu" if device in (None, "auto") else device)
        if dev.type not in ("cpu", "cuda"):
            raise FitInputError(f"device {dev}: only cpu and cuda are supported")
        ids = [] if dev.type == "cpu" else [dev.index] if dev.index is not None else None
        if ids is None:  # "cuda": as many GPUs as workers, from 0
            wanted = nprocs if nprocs is not None else available
            if wanted > available:
                raise FitInputError(_gpu_shortage(wanted, available))
            ids = list(range(max(wanted, 1)))
    absent = [i for i in ids if not 0 <= i < available]
    if absent:
        raise FitInputError(_gpu_shortage(len(ids), available, absent))
    if ids:
        if nprocs is not None and nprocs != len(ids):
            raise FitInputError(f"nprocs={nprocs} but device names {len(ids)} GPU(s) {ids}: one "
                                "worker per GPU; give as many ids as processes")
        return len(ids), ids
    return (nprocs if nprocs is not None else DEFAULT_CPU_PROCS), []


def _gpu_shortage(wanted: int, available: int, absent: Sequence[int] = ()) -> str:
    have = f"GPUs 0-{available - 1}" if available > 1 else "GPU 0" if available else "no CUDA GPU"
    which = f" (GPU {', '.join(map(str, absent))})" if absent else ""
    return (f"ddp=True asks for {wanted} GPU worker(s){which} but this machine has {have}; "
            "pass fewer (nprocs=..., device=[ids]) or device='cpu' for CPU workers with gloo")


def _loop_device(device: Any) -> Any:
    return None if device == "auto" else device


# --- running the loop --------------------------------------------------------------------------


def _fit_here(model: nn.Module, criterion: Any, optimizer: torch.optim.Optimizer, datasets: Datasets,
              *, device: Any, env: distributed.DistEnv | None = None, **loop_args: Any) -> FitResult:
    """Run the shared loop in this process."""
    return _runner(model, criterion, optimizer, datasets, device=device, env=env, **loop_args).fit()


def _runner(model: nn.Module, criterion: Any, optimizer: torch.optim.Optimizer, datasets: Datasets,
            *, device: Any, env: distributed.DistEnv | None = None, **loop_args: Any) -> loop.Runner:
    """The shared loop's runner, with the optimizer's state where the model will be."""
    env = env or distributed.detect()
    if optimizer.state:
        # The loop moves the model to its device but not the optimizer's state (Adam's
        # moments), which stays where an earlier fit, or the state loaded back from
        # workers, left it: a second fit on the GPU would fail with "Expected all tensors
        # to be on the same device". Loading the state again casts it onto the parameters.
        model.to(distributed.select_devices(distributed.parse_device(device), env).device)
        optimizer.load_state_dict(optimizer.state_dict())
    return loop.Runner(model, criterion, optimizer, datasets, device=device, env=env, **loop_args)


# --- in the workers ------------------------------------------------------------------------


_KEEP_UNTIL_EXIT: list[Any] = []


@dataclasses.dataclass
class _Outcome:
    """What rank 0 sends back: the result without the model, and the trained states."""

    result: FitResult
    model_state: dict[str, Any]
    optimizer_state: dict[str, Any]
    scheduler_state: dict[str, Any] | None


def _train_worker(model: nn.Module, criterion: Any, optimizer: torch.optim.Optimizer,
                  scheduler: Any, datasets: Datasets | None,
                  dataset_fn: Callable[[], Datasets] | None,
                  loop_args: dict[str, Any]) -> _Outcome | None:
    """One worker: build the data, run the shared loop (it joins the process group)."""
    data = dataset_fn() if dataset_fn is not None else datasets
    runner = _runner(model, criterion, optimizer, data, **loop_args)
    result = runner.fit()
    # Never freed: freeing the runner frees its DDP wrapper and with it the gloo process
    # group, whose destructor joins gloo's threads while holding the GIL; a thread still
    # releasing a finished all-gather needs the GIL, and the worker hangs for good (torch
    # 2.13, seen about once in ten runs). The worker ends with os._exit instead.
    _KEEP_UNTIL_EXIT.append(runner)
    if not distributed.detect().master_process:
        return None
    return _Outcome(
        result=dataclasses.replace(result, model=None),
        model_state=result.model.state_dict(),
        optimizer_state=optimizer.state_dict(),
        scheduler_state=scheduler.state_dict() if scheduler is not None else None,
    )


def _adopt(outcome: _Outcome, model: nn.Module, optimizer: torch.optim.Optimizer,
           scheduler: Any) -> FitResult:
    """Load rank 0's trained states into the caller's objects; the result refers to ``model``."""
    model.load_state_dict(outcome.model_state)
    optimizer.load_state_dict(outcome.optimizer_state)
    if scheduler is not None and outcome.scheduler_state is not None:
        scheduler.load_state_dict(outcome.scheduler_state)
    return dataclasses.replace(outcome.result, model=model)
