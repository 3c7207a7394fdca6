"""``trainer.fit``: train your own model with one call, DDP included (the Catalyst/Sapsan way).

::

    result = trainer.fit(model, nn.MSELoss(), optimizer, datasets={"train": ..., "valid": ...},
                         batch_size=32, num_epochs=8, scheduler=scheduler, ddp=True)

Where it runs:

* under torchrun, Slurm (``srun``) or a Kubernetes launcher (``RANK``/``WORLD_SIZE``
  set): in this process, joining the job's process group; nothing is started;
* ``ddp=False``, or ``ddp=True`` with a single process to run: in this process;
* ``ddp=True`` otherwise: :mod:`trainer.training.spawn` starts one worker per GPU (or
  ``nprocs`` CPU workers with gloo), each runs the loop, and rank 0's weights,
  optimizer and scheduler state come back into the caller's objects.

Everything that can be checked is checked in the caller before any worker starts.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from run_core.launch_env import LaunchEnv
from trainer.ranks import distributed
from trainer.training import checkpoint, spawn
from trainer.training.checks import (
    FitInputError,
    call_dataset_fn,
    check_datasets,
    check_one_batch,
    check_optimizer,
    plan_workers,
    preflight,
)
from trainer.training.config import RunConfig
from trainer.training.interrupts import terminate_as_exit
from trainer.training.loop import FitResult, Metric, Trainer
from trainer.training.sampling import Datasets, build_loaders
from trainer.training.session import RunSession
from transfer_plugins.runner import Hook, resolve_hook

log = logging.getLogger(__name__)

__all__ = ["FitInputError", "FitResult", "fit"]

Device = str | torch.device | Sequence[int] | None


@dataclasses.dataclass(frozen=True)
class _Parts:
    """What the loop needs besides the model and the data: passed as one to workers."""

    criterion: Callable[[Any, Any], torch.Tensor]
    optimizer: torch.optim.Optimizer
    scheduler: Any
    metrics: Mapping[str, Metric] | None
    display_fn: Callable[[Any, Any, Any], torch.Tensor] | None
    options: Mapping[str, Any]

    @classmethod
    def of(
        cls,
        config: RunConfig,
        criterion: Callable[[Any, Any], torch.Tensor],
        optimizer: torch.optim.Optimizer,
        scheduler: Any,
        metrics: Mapping[str, Metric] | None,
        display_fn: Callable[[Any, Any, Any], torch.Tensor] | None,
        options: Mapping[str, Any] | None,
    ) -> _Parts:
        """The parts ``fit`` was given; the run's options default to the config's, with the
        optimizer's and the scheduler's names and the learning rate."""
        if options is None:
            options = _default_options(config, optimizer, scheduler)
        return cls(criterion, optimizer, scheduler, metrics, display_fn, options)


def fit(
    model: nn.Module,
    criterion: Callable[[Any, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    datasets: Datasets | None = None,
    *,
    dataset_fn: Callable[[], Datasets] | None = None,
    scheduler: Any = None,
    metrics: Mapping[str, Metric] | None = None,
    display_fn: Callable[[Any, Any, Any], torch.Tensor] | None = None,
    ddp: bool = False,
    nprocs: int | None = None,
    device: Device = "auto",
    start_method: str = "auto",
    config: RunConfig | None = None,
    options: Mapping[str, Any] | None = None,
    launch: LaunchEnv | None = None,
    **settings: Any,
) -> FitResult:
    """Train ``model`` and return a :class:`~trainer.training.loop.FitResult`.

    Args:
        model: built identically on every rank (seed first); afterwards it has the trained weights.
        criterion: ``criterion(outputs, targets)`` returning the batch mean.
        optimizer: over ``model.parameters()``; afterwards it holds the trained state.
        datasets: ``{"train": ds, "valid": ds}`` of ``(input, target)`` pairs ("val" works too).
        dataset_fn: instead of ``datasets``, a function returning them, called once in each
            worker so large data is not pickled to every process (and once here, to check it).
        scheduler: stepped once per epoch (``ReduceLROnPlateau`` with the monitored score).
        metrics: ``name -> fn(outputs, targets)``: per-sample values, averaged exactly over
            the validation set.
        display_fn: ``fn(inputs, targets, outputs) -> NCHW tensor`` shown every display_freq,
            logged as ``predictions`` or as the function's ``image_name``.
        ddp: train with DistributedDataParallel; starts the workers unless a launcher did.
        nprocs: workers for ``ddp=True``: default one per GPU, else two CPU workers (gloo).
        device: ``"auto"`` (GPUs if any), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, or GPU ids.
        start_method: ``"auto"`` (fork in a notebook, else spawn), "spawn", "fork", "forkserver".
        config: a :class:`~trainer.training.config.RunConfig`; ``settings`` override its fields.
        options: the run's options as its metadata and checkpoints keep them (default: config, optimizer).
        launch: this process's place in the job (default: read from the launcher).
        **settings: :class:`~trainer.training.config.RunConfig` fields: ``batch_size``, ``num_epochs``
            (or ``n_epochs``), ``name``, ``checkpoints_dir``, ``remote_transfer_cmd``, ``seed``...

    Raises:
        FitInputError: bad datasets, a model or criterion failing on one batch, too many GPUs.
        trainer.training.spawn.WorkerError: a worker failed during training.
    """
    config = RunConfig.from_options(settings, base=config)
    built = _checked_datasets(model, criterion, optimizer, scheduler, datasets, dataset_fn)
    launch = launch or distributed.detect()
    parts = _Parts.of(config, criterion, optimizer, scheduler, metrics, display_fn, options)
    with terminate_as_exit():
        config, workers = _where_to_run(config, launch, ddp, nprocs, device)
        if not workers:
            return _fit_checked_here(model, built, config, launch, parts)
        data = built if dataset_fn is None else None
        del built  # a dataset_fn's data was built here only to check it: workers build theirs
        return _fit_in_workers(
            model, data, dataset_fn, config, launch, parts, workers, start_method
        )


def _checked_datasets(
    model: nn.Module,
    criterion: Callable[[Any, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    datasets: Datasets | None,
    dataset_fn: Callable[[], Datasets] | None,
) -> Datasets:
    """The run's datasets, built once here, after checking them and one batch through the model."""
    check_optimizer(model, optimizer, scheduler)
    if (datasets is None) == (dataset_fn is None):
        raise FitInputError(
            "pass exactly one of datasets={'train': ..., 'valid': ...} or dataset_fn=..."
        )
    built = datasets if datasets is not None else call_dataset_fn(dataset_fn)  # type: ignore[arg-type]
    check_datasets(built)
    check_one_batch(model, criterion, built["train"])
    return built


def _where_to_run(
    config: RunConfig, launch: LaunchEnv, ddp: bool, nprocs: int | None, device: Device
) -> tuple[RunConfig, int]:
    """``(config with the GPUs to use, workers to start)``; no workers: train in this process.

    A launched rank and ``ddp=False`` train here; ``ddp=True`` plans the workers
    (one per GPU, or ``nprocs``) and trains here too when there is one to run.
    """
    launched = launch.launcher != "none"
    if launched and nprocs not in (None, launch.world_size):
        log.warning(
            "nprocs=%d ignored: the %s launcher started %d process(es)",
            nprocs,
            launch.launcher,
            launch.world_size,
        )
    if launched or not ddp:
        if device not in ("auto", None) and config.gpu_ids is None:
            config = dataclasses.replace(config, gpu_ids=_gpu_ids(device))
        return config, 0
    count, gpu_ids = plan_workers(device, nprocs)
    config = dataclasses.replace(config, gpu_ids=tuple(gpu_ids) if gpu_ids else (-1,))
    if count == 1:
        log.info("ddp=True with one process to run: training in this process")
        return config, 0
    return config, count


def _fit_in_workers(
    model: nn.Module,
    datasets: Datasets | None,
    dataset_fn: Callable[[], Datasets] | None,
    config: RunConfig,
    launch: LaunchEnv,
    parts: _Parts,
    count: int,
    start_method: str,
) -> FitResult:
    """Start ``count`` local DDP workers and load rank 0's trained states into the caller's objects."""
    on_gpus = config.gpu_ids != (-1,)
    worker_device = distributed.Devices(torch.device("cuda" if on_gpus else "cpu"))
    preflight(config, launch, worker_device)  # this process stands in for the workers' rank 0
    worker_args = {
        "model": model,
        "datasets": datasets,
        "dataset_fn": dataset_fn,
        "config": config,
        "parts": parts,
    }
    trained = spawn.launch(
        _train_worker, worker_args, nprocs=count, start_method=start_method, uses_cuda=on_gpus
    )
    return _adopt(trained, model, parts.optimizer, parts.scheduler)


def _gpu_ids(device: Device) -> tuple[int, ...]:
    if isinstance(device, list | tuple):
        return tuple(int(i) for i in device)
    ids = distributed.parse_device(device)
    return tuple(ids) if ids is not None else ()


def _default_options(
    config: RunConfig, optimizer: torch.optim.Optimizer, scheduler: Any
) -> dict[str, Any]:
    return {
        **config.to_options(),
        "optimizer": type(optimizer).__name__,
        "lr": optimizer.param_groups[0].get("lr"),
        "scheduler": type(scheduler).__name__ if scheduler is not None else None,
    }


def _fit_checked_here(
    model: nn.Module, datasets: Datasets, config: RunConfig, launch: LaunchEnv, parts: _Parts
) -> FitResult:
    """Check everything :func:`~trainer.training.checks.preflight` checks, then run the loop here."""
    devices = distributed.select_devices(config.gpu_ids, launch)
    hook = preflight(config, launch, devices)
    return _fit_here(model, datasets, config, launch, devices, parts, hook)


def _fit_here(
    model: nn.Module,
    datasets: Datasets,
    config: RunConfig,
    launch: LaunchEnv,
    devices: distributed.Devices,
    parts: _Parts,
    hook: Hook | None,
) -> FitResult:
    """Run the loop in this process (one process, or one rank of a launched job)."""
    if parts.optimizer.state:
        # The loop moves the model but not the optimizer's state (Adam's moments), which stays
        # where an earlier fit, or the state loaded back from workers, left it; loading the
        # state again casts it onto the parameters.
        model.to(devices.device)
        parts.optimizer.load_state_dict(parts.optimizer.state_dict())
    with RunSession(config, launch, devices, parts.options, hook) as session:
        # A distinct stream per rank for dropout/augmentation; model init was the caller's.
        checkpoint.seed_everything(config.seed + launch.rank)
        loaders = build_loaders(
            datasets,
            config.batch_size,
            config.num_workers,
            config.seed,
            launch,
            pin_memory=devices.device.type == "cuda",
        )
        trainer = Trainer(
            model,
            parts.criterion,
            parts.optimizer,
            loaders,
            session,
            scheduler=parts.scheduler,
            metrics=parts.metrics,
            display_fn=parts.display_fn,
        )
        result = trainer.train()
    unsent = session.transfer.unsent if session.transfer is not None else []
    return dataclasses.replace(result, unsent=tuple(unsent)) if unsent else result


# --- in the workers ------------------------------------------------------------------------


@dataclasses.dataclass
class _Trained:
    """What rank 0 sends back: the result without the model, and the trained states."""

    result: FitResult
    model_state: dict[str, Any]
    optimizer_state: dict[str, Any]
    scheduler_state: dict[str, Any] | None


def _train_worker(
    model: nn.Module,
    datasets: Datasets | None,
    dataset_fn: Callable[[], Datasets] | None,
    config: RunConfig,
    parts: _Parts,
) -> _Trained:
    """One spawned worker: build the data, run the loop (it joins the process group)."""
    data = dataset_fn() if dataset_fn is not None else datasets
    assert data is not None
    launch = distributed.detect()
    # The caller checked the destination already; the hook only has to be imported here.
    hook = resolve_hook(config.remote_transfer_cmd) if config.remote_transfer_cmd else None
    devices = distributed.select_devices(config.gpu_ids, launch)
    result = _fit_here(model, data, config, launch, devices, parts, hook)
    # Every worker returns its states (references, no copy); spawn keeps rank 0's only.
    return _Trained(
        result=dataclasses.replace(result, model=None),  # type: ignore[arg-type]
        model_state=result.model.state_dict(),
        optimizer_state=parts.optimizer.state_dict(),
        scheduler_state=parts.scheduler.state_dict() if parts.scheduler is not None else None,
    )


def _adopt(
    trained: _Trained, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any
) -> FitResult:
    """Load rank 0's trained states into the caller's objects; the result refers to ``model``."""
    model.load_state_dict(trained.model_state)
    optimizer.load_state_dict(trained.optimizer_state)
    if scheduler is not None and trained.scheduler_state is not None:
        scheduler.load_state_dict(trained.scheduler_state)
    return dataclasses.replace(trained.result, model=model)
