"""Checks run before any worker, process group or training step exists.

A mistake in the datasets, the model, the GPUs asked for, the run directory or
the transfer hook is reported here, with what is wrong and what to do, instead
of as a traceback from inside a worker process an hour later.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from run_core.atomic import ensure_writable_dir
from run_core.launch_env import LaunchEnv
from run_core.redaction import redact_text
from run_core.run_lock import LOCK_NAME, RunLock, RunLockError
from snapshot_store.format.frames import META_FILE, STATUS_FILE
from snapshot_store.write.documents import RESERVE_FILE
from trainer.ranks.distributed import Devices
from trainer.training import checkpoint
from trainer.training.config import RunConfig, UsageError
from trainer.training.run_alerts import run_alerts
from trainer.training.sampling import VALID_SPLITS, Datasets
from transfer_plugins.runner import Hook, resolve_hook, run_preflight

log = logging.getLogger(__name__)


# CPU workers when ddp=True finds no GPU and nprocs is not given. Each worker
# already uses several cores through intra-op threads (they are shared out, see
# trainer.training.spawn), so more processes mostly add all-reduce traffic on one machine.
DEFAULT_CPU_PROCS = 2
# Samples of the first training batch run through the model in the caller as a check:
# 2, not 1, so BatchNorm in training mode does not fail on a batch that the loop would not see.
CHECK_SAMPLES = 2


class FitInputError(ValueError):
    """An argument of :func:`fit` can not work; raised before any worker starts."""


# --- checks, all in the caller ------------------------------------------------------------


def check_optimizer(model: nn.Module, optimizer: Any, scheduler: Any) -> None:
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise FitInputError(
            f"optimizer must be a torch.optim.Optimizer over model.parameters(), "
            f"not {type(optimizer).__name__}"
        )
    own = {id(p) for p in model.parameters()}
    if any(id(p) not in own for group in optimizer.param_groups for p in group["params"]):
        raise FitInputError(
            "the optimizer holds parameters that are not the model's; build it "
            "over model.parameters() (after moving the model, if you move it)"
        )
    bound = getattr(scheduler, "optimizer", optimizer)
    if scheduler is not None and bound is not optimizer:
        raise FitInputError("the scheduler was built for another optimizer than the one passed")


def call_dataset_fn(dataset_fn: Callable[[], Datasets]) -> Datasets:
    if not callable(dataset_fn):
        raise FitInputError(
            f"dataset_fn must be a function returning the datasets, not {type(dataset_fn).__name__}"
        )
    return dataset_fn()


def check_datasets(datasets: Any) -> None:
    """Raise :class:`FitInputError` unless ``datasets`` has usable train and valid splits."""
    if not isinstance(datasets, Mapping):
        raise FitInputError(
            f"datasets must be a dict like {{'train': ds, 'valid': ds}}, not "
            f"{type(datasets).__name__}"
        )
    valid_key = next((k for k in VALID_SPLITS if k in datasets), None)
    missing = [
        k for k, present in (("train", "train" in datasets), ("valid", valid_key)) if not present
    ]
    if missing:
        raise FitInputError(
            f"datasets has no {' and no '.join(map(repr, missing))} split (it has "
            f"{sorted(map(str, datasets)) or 'nothing'}); pass {{'train': ..., 'valid': ...}}: "
            "the validation split drives the best checkpoint and early stopping"
        )
    extra = sorted(set(map(str, datasets)) - {"train", *VALID_SPLITS})
    if extra:
        log.warning("datasets: split(s) %s are not used by fit (only 'train' and 'valid')", extra)
    for split in ("train", valid_key):
        ds = datasets[split]
        if not (hasattr(ds, "__len__") and hasattr(ds, "__getitem__")):
            raise FitInputError(
                f"datasets[{split!r}] must be a map-style dataset (with __len__ and "
                f"__getitem__), not {type(ds).__name__}"
            )
        if len(ds) == 0:
            raise FitInputError(f"datasets[{split!r}] is empty")
        sample = ds[0]
        if not (isinstance(sample, (tuple, list)) and len(sample) == 2):
            raise FitInputError(
                f"datasets[{split!r}][0] must be an (input, target) pair, not {_shapes(sample)}"
            )


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


def check_one_batch(
    model: nn.Module, criterion: Callable[[Any, Any], torch.Tensor], train: Any
) -> None:
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
        raise FitInputError(
            f"the first training samples do not stack into a batch "
            f"({_shapes(samples[0])}): {type(err).__name__}: {err}"
        ) from err
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
        shown = (
            f"inputs {_shapes(inputs)}" if stage == "model" else f"model outputs {_shapes(outputs)}"
        ) + f", targets {_shapes(targets)}"
        raise FitInputError(
            f"the {stage} failed on one batch of {len(samples)} training samples "
            f"({shown}): {type(err).__name__}: {err}"
        ) from err
    finally:
        for buffer, saved in buffers:
            buffer.copy_(saved)
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise FitInputError(
            f"the criterion must return the batch mean as a scalar tensor, got "
            f"{_shapes(loss)} for model outputs {_shapes(outputs)}, targets "
            f"{_shapes(targets)} (a loss with reduction='none'?)"
        )


def _without_secrets(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` whose errors quote no secret (an endpoint's login, a token), chained or not."""

    @functools.wraps(check)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return check(*args, **kwargs)
        except Exception as err:
            safe = redact_text(str(err))
            if safe != str(err):
                # The message already says what the cause said; the cause would print the secret.
                err.args = (safe,)
                err.__cause__, err.__suppress_context__ = None, True
            raise

    return checked


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
        dev = torch.device(
            "cuda"
            if device in (None, "auto") and available
            else "cpu"
            if device in (None, "auto")
            else device
        )
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
            raise FitInputError(
                f"nprocs={nprocs} but device names {len(ids)} GPU(s) {ids}: one "
                "worker per GPU; give as many ids as processes"
            )
        return len(ids), ids
    return (nprocs if nprocs is not None else DEFAULT_CPU_PROCS), []


def _gpu_shortage(wanted: int, available: int, absent: Sequence[int] = ()) -> str:
    have = f"GPUs 0-{available - 1}" if available > 1 else "GPU 0" if available else "no CUDA GPU"
    which = f" (GPU {', '.join(map(str, absent))})" if absent else ""
    return (
        f"ddp=True asks for {wanted} GPU worker(s){which} but this machine has {have}; "
        "pass fewer (nprocs=..., device=[ids]) or device='cpu' for CPU workers with gloo"
    )


@_without_secrets
def preflight(config: RunConfig, launch: LaunchEnv, devices: Devices | None = None) -> Hook | None:
    """Every check that can fail on bad input, before a process group or a worker exists.

    Returns the resolved transfer hook (checked against its destination on rank 0).
    The run dir is created last, by the check that it can be written: a run refused
    for anything else leaves nothing behind.
    """
    if devices is not None and config.amp == "fp16" and devices.device.type != "cuda":
        raise UsageError("--amp fp16 needs a GPU; use --amp bf16 or off on the CPU")
    spec = config.remote_transfer_cmd
    hook = resolve_hook(spec) if spec else None  # every rank imports it: a typo fails everywhere
    try:
        run_alerts(config.alert_rule, config.alert_cmd)  # resolved again by the session
    except ValueError as err:  # a rule against a baseline, no destination, a bad plugin
        raise UsageError(str(err)) from None
    if config.continue_train and not (config.run_dir / checkpoint.LATEST).exists():
        raise UsageError(
            f"--continue-train: no checkpoint {config.run_dir / checkpoint.LATEST} to resume from"
        )
    if launch.is_rank_zero and config.record:
        check_one_writer(config, launch)
        if hook is not None and spec:
            # The rank that uploads checks the destination (bucket, credentials, endpoint).
            run_preflight(hook, spec)
    try:
        ensure_writable_dir(config.run_dir)
    except OSError as err:
        raise UsageError(
            f"--checkpoints-dir {config.checkpoints_dir}: can not write "
            f"{config.run_dir} ({err.strerror or err})"
        ) from None
    return hook


# --- one writer per run ----------------------------------------------------------------------

# What a store holds before its first record: a new run may take it over.
_NOTHING_RECORDED = frozenset({META_FILE, STATUS_FILE, RESERVE_FILE, LOCK_NAME})


def check_one_writer(config: RunConfig, launch: LaunchEnv) -> None:
    """Refuse a store another writer is writing, and a new run into an old run's store.

    Only probes the store's lock: rank 0's :class:`~snapshot_store.Recorder` takes it for the
    run (this check may run in a launcher or the caller of spawned workers).
    """
    try:
        RunLock(config.store_dir, instead="choose another --name").check_free()
    except RunLockError as err:
        raise UsageError(str(err)) from None
    if config.continue_train or launch.restart_count:
        return  # resuming (asked for, or an elastic restart) continues the old store
    store = config.store_dir
    if not (store.is_dir() and any(p.name not in _NOTHING_RECORDED for p in store.iterdir())):
        return  # no store, or one of a run stopped before it recorded anything (in rendezvous)
    resume = (
        "pass --continue-train to resume it from its latest.pth"
        if (config.run_dir / checkpoint.LATEST).exists()
        else "it has no latest.pth to resume from"
    )
    raise UsageError(
        f"--name {config.name}: {config.run_dir} already holds a run (its store {store} has "
        f"data), and a new run would be appended to it; {resume}, or choose a new --name "
        f"(or remove {config.run_dir})"
    )
