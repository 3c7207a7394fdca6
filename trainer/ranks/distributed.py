"""This process's device and process group, for the place the launcher gave it in the job.

Rank, world size and rendezvous come from the project's one rank source,
:mod:`run_core.launch_env` (torchrun, Kubernetes-style launchers, Slurm ``srun``,
or nothing); this module adds what needs torch: the device, joining and leaving
the process group, and the few collectives the loop uses.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from run_core.launch_env import LaunchEnv, LaunchError, read_launch_env
from trainer.ranks import rendezvous, stop_witness

log = logging.getLogger(__name__)

__all__ = ["Devices", "LaunchEnv", "LaunchError", "detect", "select_devices"]


def detect() -> LaunchEnv:
    """This process's place in the job (read once per run by the entry points)."""
    return read_launch_env()


# --- devices -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Devices:
    """Where this process computes: one device, plus the ids for DataParallel (if any)."""

    device: torch.device
    data_parallel_ids: tuple[int, ...] = ()

    @property
    def backend(self) -> str:
        """The collective backend for this device: nccl on GPU, gloo on CPU."""
        return "nccl" if self.device.type == "cuda" else "gloo"


def check_gpu_ids(gpu_ids: Sequence[int] | None) -> None:
    """Raise :class:`LaunchError` for ids that name no GPU of this machine.

    Their form (-1 alone, no repeats) is :class:`~trainer.training.config.RunConfig`'s check.
    """
    ids = [i for i in gpu_ids or () if i >= 0]
    if not ids:
        return
    count = torch.cuda.device_count()  # unlike is_available(), keeps forked workers CUDA-capable
    absent = [i for i in ids if i >= count]
    if absent:
        have = f"GPUs 0-{count - 1}" if count else "no CUDA GPU"
        raise LaunchError(
            f"--gpu-ids {absent[0]}: this machine has {have}; use --gpu-ids -1 to train on the CPU"
        )


def select_devices(gpu_ids: Sequence[int] | None, launch: LaunchEnv) -> Devices:
    """Pick this process's device the DeepLIIF way: ``gpu_ids[local_rank]`` under a launcher.

    ``gpu_ids`` None or empty: GPU ``local_rank`` when CUDA is there, else the CPU.
    ``[-1]``: the CPU. Several ids without a launcher: DataParallel over them.
    """
    check_gpu_ids(gpu_ids)
    ids = list(gpu_ids or [])
    if ids == [-1]:
        return Devices(torch.device("cpu"))
    if not ids:
        if launch.local_rank < torch.cuda.device_count():
            return Devices(torch.device("cuda", launch.local_rank))
        return Devices(torch.device("cpu"))
    if launch.distributed or launch.launcher != "none":
        if launch.local_rank >= len(ids):
            raise LaunchError(
                f"--gpu-ids {ids}: local rank {launch.local_rank} has no GPU; give "
                f"one --gpu-ids per process on the node ({launch.local_world_size})"
            )
        return Devices(torch.device("cuda", ids[launch.local_rank]))
    if len(ids) > 1:
        return Devices(torch.device("cuda", ids[0]), tuple(ids))
    return Devices(torch.device("cuda", ids[0]))


def parse_device(device: str | torch.device | Sequence[int] | None) -> list[int] | None:
    """``fit``'s device argument as ``gpu_ids``: ``"cpu"``, ``"cuda:1"``, ``[0, 1]`` or None (auto)."""
    if device is None:
        return None
    if isinstance(device, list | tuple):
        return [int(i) for i in device]
    chosen = torch.device(device)  # type: ignore[arg-type]  # a str or a device here
    if chosen.type == "cpu":
        return [-1]
    if chosen.type == "cuda":
        return [chosen.index or 0]
    raise LaunchError(f"device {chosen}: only cpu and cuda are supported")


def wrap_model(
    model: nn.Module, launch: LaunchEnv, devices: Devices
) -> tuple[nn.Module, nn.Module]:
    """The module to train and the one to evaluate: DDP, DataParallel or ``model`` itself.

    DDP's own forward expects every rank to run the same number of batches, and
    validation shards differ in length, so DDP runs evaluate the bare module.
    DDP broadcasts rank 0's (possibly resumed) weights when it is built.
    """
    if launch.distributed:
        ids = [devices.device.index] if devices.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids), model
    if devices.data_parallel_ids:
        net = nn.DataParallel(model, device_ids=list(devices.data_parallel_ids))
        return net, net
    return model, model


# --- the process group -------------------------------------------------------------------


def init_process_group(launch: LaunchEnv, devices: Devices, timeout_s: float = 600.0) -> bool:
    """Join the job's process group; True when this call created it (and must destroy it)."""
    if not launch.distributed or dist.is_initialized():
        return False
    settle_collectives_at_exit()
    if devices.device.type == "cuda":
        torch.cuda.set_device(devices.device)
    timeout = timedelta(seconds=timeout_s)
    store: dist.Store
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        # torchrun's own store can outlive a worker group (torch 2.11 keeps it across
        # --max-restarts): a restarted group would read the dead group's gloo addresses.
        # One key namespace per attempt keeps the groups apart.
        agent_store = dist.TCPStore(
            str(launch.master_addr),
            int(launch.master_port or 0),  # set: read_launch_env refuses a group without one
            launch.world_size,
            is_master=False,
            timeout=timeout,
        )
        store = dist.PrefixStore(f"trainer/attempt_{launch.restart_count}", agent_store)
        rendezvous.await_ranks(store, launch, timeout)
        dist.init_process_group(
            devices.backend,
            store=store,
            rank=launch.rank,
            world_size=launch.world_size,
            timeout=timeout,
        )
    else:
        # Exported for anything in this process that reads them (Slurm's were derived in detect()).
        os.environ.setdefault("MASTER_ADDR", str(launch.master_addr))
        os.environ.setdefault("MASTER_PORT", str(launch.master_port))
        store = rendezvous.job_store(launch, timeout)
        rendezvous.await_ranks(store, launch, timeout)
        dist.init_process_group(
            devices.backend,
            store=store,
            rank=launch.rank,
            world_size=launch.world_size,
            timeout=timeout,
        )
    global _witness
    _witness = stop_witness.start_witness(store, launch.rank, launch.world_size)
    log.debug(
        "rank %d/%d joined %s group at %s:%s",
        launch.rank,
        launch.world_size,
        devices.backend,
        launch.master_addr,
        launch.master_port,
    )
    return True


class RankLostError(RuntimeError):
    """A stop signal reached this rank but not every rank: one died, the launcher stopped the rest."""


# This process's witness of stop signals, while it is in a group it made (see stop_witness).
_witness: stop_witness.StopWitness | None = None


def check_stopped_everywhere() -> None:
    """After a stop signal: raise :class:`RankLostError` unless every rank of the job got one.

    torchrun stops the surviving ranks with the SIGTERM a scheduler would send; a rank
    that never got it had died (killed, out of memory) and the run failed.
    """
    if _witness is not None and not _witness.everyone_stopping():
        raise RankLostError(
            f"a rank of the {_witness.world_size} stopped without a stop signal (killed? out "
            "of memory?), and the launcher stopped the others: the run failed"
        )


def destroy_process_group() -> None:
    """Leave the group (safe to call when none exists)."""
    global _witness
    if _witness is not None:
        _witness.close()
        _witness = None
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def group_size() -> int:
    """Processes in this process's group: 1 where there is none."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def barrier() -> None:
    """Wait for every rank (nothing to do in one process)."""
    if group_size() > 1:
        dist.barrier()


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum ``values`` over all ranks in place (nothing to do in one process)."""
    if group_size() > 1:
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def all_gather_objects(obj: object) -> list[object]:
    """Every rank's ``obj``, in rank order (``[obj]`` in one process)."""
    size = group_size()
    if size > 1:
        out: list[object] = [None] * size
        dist.all_gather_object(out, obj)
        return out
    return [obj]


# --- leaving at exit ---------------------------------------------------------------------

# How long the interpreter waits at exit for the process group's worker threads.
SETTLE_S = 0.1


@functools.cache  # registered once per process
def settle_collectives_at_exit() -> None:
    """At interpreter exit, give the process group's worker threads the GIL for a moment.

    A collective queued during ``backward()`` holds a Python object (torch stashes the
    autograd context in the thread-local state the collective captures). The gloo
    worker that ran it drops that object just after the collective completes; when the
    main thread has reached interpreter finalization by then, the worker cannot take the
    GIL and the process aborts ("terminate called without an active exception",
    SIGABRT): a finished DDP run that torchrun reports failed, seen once in 3-10 runs of
    Accelerate's 2-process example on a busy 2-core machine. Sleeping in an atexit
    handler (the interpreter alive, the GIL released) lets those drops finish first.
    Called on every rank by the entry points that join or may join a process group.
    """
    atexit.register(_let_collectives_settle)


def _let_collectives_settle() -> None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "torch.distributed" in sys.modules:
        time.sleep(SETTLE_S)
