"""Who this process is in a job: rank, world size and rendezvous, read once from the launcher.

The one rank source of the project (no torch): :func:`rank_zero_only` says which
process records (the store's ``Recorder`` and the ``SummaryWriter`` are null objects
elsewhere), the trainer asks it how to join the process group. Launchers
understood, first match wins:

* a process group already initialised (Lightning, Accelerate, a user's script):
  its rank and size;
* torchrun and Kubernetes-style launchers (PyTorchJob, a pod spec, ``trainer.training.spawn``):
  ``RANK`` and ``WORLD_SIZE``, with ``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT``;
* Slurm ``srun`` without torchrun: ``SLURM_PROCID``, ``SLURM_NTASKS`` and ``SLURM_LOCALID``,
  with ``MASTER_ADDR`` defaulting to the first host of the node list;
* nothing: one process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

DEFAULT_PORT = 29500
# Slurm jobs sharing a node each get their own port: 15000 + job id modulo this.
_SLURM_PORT_BASE, _SLURM_PORT_SPAN = 15000, 20000


class LaunchError(RuntimeError):
    """The launch environment, or the way workers were asked for, can not work; says why."""


@dataclass(frozen=True)
class LaunchEnv:
    """This process's place in the job, as the launcher described it."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    launcher: str = "none"  # none | initialized | torchrun | env | slurm
    master_addr: str | None = None
    master_port: int | None = None
    restart_count: int = 0  # > 0: torchrun restarted the worker group (elastic)

    @property
    def is_rank_zero(self) -> bool:
        """Global rank 0: the only process that logs, records and saves."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """More than one process: a process group is needed."""
        return self.world_size > 1


def read_launch_env(environ: Mapping[str, str] | None = None) -> LaunchEnv:
    """This process's :class:`LaunchEnv`; raises :class:`LaunchError` for inconsistent variables."""
    env = os.environ if environ is None else environ
    group = _initialized_group()
    if group is not None and environ is None:
        rank, world = group
        return LaunchEnv(
            rank=rank,
            world_size=world,
            local_rank=_int(env, "LOCAL_RANK", 0),
            local_world_size=_int(env, "LOCAL_WORLD_SIZE", 1),
            launcher="initialized",
            restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0),
        )
    if env.get("RANK", "").strip() and env.get("WORLD_SIZE", "").strip():
        result = LaunchEnv(
            rank=_int(env, "RANK"),
            world_size=_int(env, "WORLD_SIZE"),
            local_rank=_int(env, "LOCAL_RANK", 0),
            local_world_size=_int(env, "LOCAL_WORLD_SIZE", 1),
            launcher="torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env",
            master_addr=env.get("MASTER_ADDR") or None,
            master_port=_int(env, "MASTER_PORT", 0) or None,
            restart_count=_int(env, "TORCHELASTIC_RESTART_COUNT", 0),
        )
    elif env.get("SLURM_PROCID", "").strip() and _slurm_tasks(env) > 1:
        result = LaunchEnv(
            rank=_int(env, "SLURM_PROCID"),
            world_size=_slurm_tasks(env),
            local_rank=_int(env, "SLURM_LOCALID", 0),
            local_world_size=_slurm_local_tasks(env),
            launcher="slurm",
            master_addr=env.get("MASTER_ADDR") or _slurm_master_addr(env),
            master_port=_int(env, "MASTER_PORT", _slurm_port(env)),
        )
    else:
        return LaunchEnv()
    if not 0 <= result.rank < result.world_size:
        raise LaunchError(
            f"rank {result.rank} is outside world size {result.world_size} "
            f"(launcher: {result.launcher})"
        )
    if result.distributed and (not result.master_addr or not result.master_port):
        raise LaunchError(
            f"{result.world_size} processes ({result.launcher} launch) but "
            "MASTER_ADDR and MASTER_PORT are not both set; export them"
        )
    return result


T = TypeVar("T")


def rank_zero_only(real: type[T], null: type[T], rank: int | None = None) -> type[T]:
    """``real`` on the process that records, global rank 0, and ``null`` on every other.

    The one rank gate (nanoGPT's ``master_process``, Lightning's ``rank_zero_only``):
    the writers' constructors ask it which class to be, and the null class's methods
    do nothing, so no other module reads the rank to decide who writes. ``rank``: the
    rank a framework already named (None: read from the launch environment now).
    """
    return real if (read_launch_env().rank if rank is None else rank) == 0 else null


def _initialized_group() -> tuple[int, int] | None:
    """``(rank, world size)`` of an initialised torch process group, without importing torch."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    return dist.get_rank(), dist.get_world_size()


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
    return _SLURM_PORT_BASE + int(job) % _SLURM_PORT_SPAN if job.isdigit() else DEFAULT_PORT


def _slurm_master_addr(env: Mapping[str, str]) -> str | None:
    nodelist = (
        env.get("SLURM_STEP_NODELIST") or env.get("SLURM_NODELIST") or env.get("SLURM_JOB_NODELIST")
    )
    if not nodelist:
        return None
    if "[" not in nodelist:
        return nodelist.split(",")[0].strip() or None
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        raise LaunchError(
            f"SLURM_NODELIST={nodelist!r} needs `scontrol show hostnames` to "
            "expand, and scontrol is not on PATH; export MASTER_ADDR"
        )
    try:
        out = subprocess.run(
            [scontrol, "show", "hostnames", nodelist],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (subprocess.SubprocessError, OSError) as err:
        raise LaunchError(
            f"`scontrol show hostnames {nodelist}` failed ({err}); export MASTER_ADDR"
        ) from None
    return out[0] if out else None
