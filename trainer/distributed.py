"""Who am I in the job? Rank, world size, local rank and device, decided once from the launcher.

Launchers understood (first match wins):

* torchrun / torch.distributed.run: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``TORCHELASTIC_*``.
* Kubernetes-style (PyTorchJob, a hand-written pod spec, ``trainer.spawn``): ``RANK`` and
  ``WORLD_SIZE`` with ``MASTER_ADDR`` / ``MASTER_PORT``; ``LOCAL_RANK`` defaults to 0.
* Slurm ``srun`` without torchrun: ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``;
  ``MASTER_ADDR`` defaults to the first host of ``SLURM_NODELIST``.
* Nothing: one process (possibly driving several GPUs with DataParallel).

``master_process`` (global rank 0) is the one gate for logging, the store and checkpoints.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping, Sequence

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)

DEFAULT_PORT = 29500


class LaunchError(RuntimeError):
    """The launch environment or device choice can not work; the message says why."""


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the job, as the launcher described it."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    launcher: str = "none"  # none | torchrun | env | slurm
    master_addr: str | None = None
    master_port: int | None = None
    restart_count: int = 0  # > 0: torchrun restarted the worker group (elastic)

    @property
    def master_process(self) -> bool:
        """Global rank 0: the only process that logs, records and saves."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """More than one process: a process group is needed."""
        return self.world_size > 1


def _int(environ: Mapping[str, str], name: str, default: int | None = None) -> int:
    value = environ.get(name, "").strip()
    if not value:
        if default is None:
            raise LaunchError(f"environment variable {name} is not set")
        return default
    try:
        return int(value)
    except ValueError:
        raise LaunchError(f"environment variable {name}={value!r} is not an integer") from None


def detect(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read the launcher's variables; pure, touches no process group."""
    env = os.environ if environ is None else environ
    if dist.is_available() and dist.is_initialized():  # already inside a group: join it
        return DistEnv(
            rank=dist.get_rank(), world_size=dist.get_world_size(),
            local_rank=_int(env, "LOCAL_RANK", 0),
            local_world_size=_int(env, "LOCAL_WORLD_SIZE", 1), launcher="initialized",
            restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0),
        )
    if env.get("RANK", "").strip() and env.get("WORLD_SIZE", "").strip():
        launcher = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
        result = DistEnv(
            rank=_int(env, "RANK"),
            world_size=_int(env, "WORLD_SIZE"),
            local_rank=_int(env, "LOCAL_RANK", 0),
            local_world_size=_int(env, "LOCAL_WORLD_SIZE", 1),
            launcher=launcher,
            master_addr=env.get("MASTER_ADDR") or None,
            master_port=_int(env, "MASTER_PORT", 0) or None,
            restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0),
        )
    elif env.get("SLURM_PROCID", "").strip() and _slurm_tasks(env) > 1:
        result = DistEnv(
            rank=_int(env, "SLURM_PROCID"),
            world_size=_slurm_tasks(env),
            local_rank=_int(env, "SLURM_LOCALID", 0),
            local_world_size=_slurm_local_tasks(env),
            launcher="slurm",
            master_addr=env.get("MASTER_ADDR") or _slurm_master_addr(env),
            master_port=_int(env, "MASTER_PORT", _slurm_port(env)),
        )
    else:
        return DistEnv()
    if not 0 <= result.rank < result.world_size:
        raise LaunchError(f"rank {result.rank} is outside world size {result.world_size} "
                          f"(launcher: {result.launcher})")
    if result.distributed and (not result.master_addr or not result.master_port):
        raise LaunchError(f"{result.world_size} processes ({result.launcher} launch) but "
                          "MASTER_ADDR and MASTER_PORT are not both set; export them")
    return result


def _slurm_tasks(env: Mapping[str, str]) -> int:
    # SLURM_STEP_NUM_TASKS belongs to the srun step; SLURM_NTASKS to the whole allocation.
    return _int(env, "SLURM_STEP_NUM_TASKS", _int(env, "SLURM_NTASKS", 1))


def _slurm_local_tasks(env: Mapping[str, str]) -> int:
    value = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE") or "1"
    try:
        return int(value.split("(")[0].split(",")[0])
    except ValueError:
        return 1


def _slurm_port(env: Mapping[str, str]) -> int:
    # One port per job, so two jobs sharing a node do not collide (Lightning does the same).
    job = env.get("SLURM_JOB_ID", "").strip()
    return 15000 + int(job) % 20000 if job.isdigit() else DEFAULT_PORT


def _slurm_master_addr(env: Mapping[str, str]) -> str | None:
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_NODELIST") or env.get("SLURM_JOB_NODELIST")
    if not nodelist:
        return None
    if "[" not in nodelist:
        return nodelist.split(",")[0].strip() or None
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        raise LaunchError(f"SLURM_NODELIST={nodelist!r} needs `scontrol show hostnames` to "
                          "expand, and scontrol is not on PATH; export MASTER_ADDR")
    try:
        out = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True,
                             text=True, timeout=30, check=True).stdout.split()
    except (subprocess.SubprocessError, OSError) as err:
        raise LaunchError(f"`scontrol show hostnames {nodelist}` failed ({err}); "
                          "export MASTER_ADDR") from None
    return out[0] if out else None


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
    """Raise :class:`LaunchError` for ids that name no GPU of this machine."""
    if not gpu_ids:
        return
    ids = list(gpu_ids)
    if -1 in ids:
        if len(ids) > 1:
            raise LaunchError(f"--gpu-ids {ids}: -1 (CPU) can not be mixed with GPU ids")
        return
    if any(i < -1 for i in ids):
        raise LaunchError(f"--gpu-ids {ids}: ids are 0 or more, or -1 for CPU")
    if len(set(ids)) != len(ids):
        raise LaunchError(f"--gpu-ids {ids}: an id is repeated")
    count = torch.cuda.device_count()  # unlike is_available(), keeps forked workers CUDA-capable
    absent = [i for i in ids if i >= count]
    if absent:
        have = f"GPUs 0-{count - 1}" if count else "no CUDA GPU"
        raise LaunchError(f"--gpu-ids {absent[0]}: this machine has {have}; "
                          "use --gpu-ids -1 to train on the CPU")


def select_devices(gpu_ids: Sequence[int] | None, env: DistEnv) -> Devices:
    """Pick this process's device the DeepLIIF way: ``gpu_ids[local_rank]`` under a launcher.

    ``gpu_ids`` None or empty: GPU ``local_rank`` when CUDA is there, else the CPU.
    ``[-1]``: the CPU. Several ids without a launcher: DataParallel over them.
    """
    check_gpu_ids(gpu_ids)
    ids = list(gpu_ids or [])
    if ids == [-1]:
        return Devices(torch.device("cpu"))
    if not ids:
        if env.local_rank < torch.cuda.device_count():
            return Devices(torch.device("cuda", env.local_rank))
        return Devices(torch.device("cpu"))
    if env.distributed or env.launcher != "none":
        if env.local_rank >= len(ids):
            raise LaunchError(f"--gpu-ids {ids}: local rank {env.local_rank} has no GPU; give "
                              f"one --gpu-ids per process on the node ({env.local_world_size})")
        return Devices(torch.device("cuda", ids[env.local_rank]))
    if len(ids) > 1:
        return Devices(torch.device("cuda", ids[0]), tuple(ids))
    return Devices(torch.device("cuda", ids[0]))


def parse_device(device: str | torch.device | Sequence[int] | None) -> list[int] | None:
    """``fit``'s device argument as ``gpu_ids``: ``"cpu"``, ``"cuda:1"``, ``[0, 1]`` or None (auto)."""
    if device is None or isinstance(device, (list, tuple)):
        return list(device) if device is not None else None
    device = torch.device(device)
    if device.type == "cpu":
        return [-1]
    if device.type == "cuda":
        return [device.index or 0]
    raise LaunchError(f"device {device}: only cpu and cuda are supported")


# --- the process group -------------------------------------------------------------------


def init_process_group(env: DistEnv, devices: Devices, timeout_s: float = 600.0) -> bool:
    """Join the job's process group; True when this call created it (and must destroy it)."""
    if not env.distributed or dist.is_initialized():
        return False
    if devices.device.type == "cuda":
        torch.cuda.set_device(devices.device)
    timeout = timedelta(seconds=timeout_s)
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        # torchrun's own store can outlive a worker group (torch 2.11 keeps it across
        # --max-restarts): a restarted group would read the dead group's gloo addresses.
        # One key namespace per attempt keeps the groups apart.
        agent_store = dist.TCPStore(str(env.master_addr), int(env.master_port), env.world_size,
                                    is_master=False, timeout=timeout)
        store = dist.PrefixStore(f"trainer/attempt_{env.restart_count}", agent_store)
        dist.init_process_group(devices.backend, store=store, rank=env.rank,
                                world_size=env.world_size, timeout=timeout)
    else:
        # env:// reads these; Slurm's defaults were derived in detect(), so export them.
        os.environ.setdefault("MASTER_ADDR", str(env.master_addr))
        os.environ.setdefault("MASTER_PORT", str(env.master_port))
        dist.init_process_group(devices.backend, init_method="env://", rank=env.rank,
                                world_size=env.world_size, timeout=timeout)
    log.debug("rank %d/%d joined %s group at %s:%s", env.rank, env.world_size, devices.backend,
              env.master_addr, env.master_port)
    return True


def destroy_process_group() -> None:
    """Leave the group (safe to call when none exists)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    """Wait for every rank (nothing to do in one process)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum ``values`` over all ranks in place (nothing to do in one process)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def all_gather_objects(obj: object) -> list[object]:
    """Every rank's ``obj``, in rank order (``[obj]`` in one process)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        out: list[object] = [None] * dist.get_world_size()
        dist.all_gather_object(out, obj)
        return out
    return [obj]
