"""Where the ranks of a job meet: the key-value store at ``MASTER_ADDR:MASTER_PORT``.

Rank 0 serves it, as ``env://`` does. A launcher may hold that port itself:
the seeds' Kubernetes wrapper calls ``init_process_group`` in each pod and then
runs ``trainer train`` as a child with the same ``MASTER_*``, ``RANK`` and
``WORLD_SIZE``. Then rank 0 can not serve, and every rank meets through the
launcher's store instead, under keys of the trainer's own, so the launcher's
group and ours never read each other's keys. A port held by another trainer job
or by a program that is not a PyTorch store is refused in one line.

The wait for absent ranks is Python's (:func:`await_ranks`): a C++ call blocked on an
absent rank does not run Python's signal handlers, and a job stopped before all
its ranks came (SIGTERM from a scheduler, Ctrl-C) must stop at once, not after
the rendezvous timeout.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import torch.distributed as dist

from run_core.launch_env import LaunchEnv, LaunchError

log = logging.getLogger(__name__)

# Set by a trainer's rank 0 in the store it serves: a second job finding it must not join.
SERVED_KEY = "trainer/served"
# Counted up by each rank as it reaches the store: the process group is made once all have.
ARRIVED_KEY = "arrived"
# How often a rank looks whether the others have come.
POLL_S = 0.1
# Rank 0 says who it waits for once the others are this late.
SAY_WAITING_AFTER_S = 5.0


def await_ranks(store: dist.Store, launch: LaunchEnv, timeout: timedelta) -> None:
    """Return once every rank of the job reached ``store``; LaunchError after ``timeout``.

    Waits in Python, so SIGTERM and Ctrl-C end it at once (the process group's own
    wait for the absent ranks would block in C++ until its timeout).
    """
    store.add(ARRIVED_KEY, 1)
    started = time.monotonic()
    said = False
    while (arrived := store.add(ARRIVED_KEY, 0)) < launch.world_size:
        waited = time.monotonic() - started
        if waited > timeout.total_seconds():
            raise LaunchError(
                f"rank {launch.rank}: {arrived} of {launch.world_size} ranks reached "
                f"{launch.master_addr}:{launch.master_port} in {waited:.0f} s: start the others "
                "with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE"
            )
        if not said and launch.rank == 0 and waited >= SAY_WAITING_AFTER_S:
            said = True
            log.info(
                "waiting for %d of %d ranks at %s:%s (up to %.0f s; Ctrl-C stops)",
                launch.world_size - arrived,
                launch.world_size,
                launch.master_addr,
                launch.master_port,
                timeout.total_seconds(),
            )
        time.sleep(POLL_S)


# Seconds rank 0 waits for an answer from whatever holds MASTER_PORT before calling it foreign.
PROBE_TIMEOUT_S = 30.0


def job_store(launch: LaunchEnv, timeout: timedelta) -> dist.Store:
    """This job's store: served by rank 0, or the launcher's, under a prefix per run."""
    host, port = str(launch.master_addr), int(launch.master_port or 0)
    store = None
    if launch.rank == 0:
        store = _serve(host, port, launch.world_size, timeout)
    if store is None:  # another rank, or rank 0 beside a launcher that holds the port
        wait = timeout if launch.rank else timedelta(seconds=PROBE_TIMEOUT_S)
        store = _connect(host, port, launch, wait)
        store.set_timeout(timeout)
    # The n-th trainer run of each rank meets the n-th of the others: a wrapper that
    # runs the trainer twice in the launcher's group does not read its first run's keys.
    run = store.add(f"trainer/runs/rank_{launch.rank}", 1)
    return dist.PrefixStore(f"trainer/run_{run}", store)


def _serve(host: str, port: int, world_size: int, timeout: timedelta) -> dist.Store | None:
    """Rank 0's own store; None when the port is already held (by the launcher, maybe)."""
    try:
        # multi_tenant, as env:// has it: a second run in this process shares the server.
        store = dist.TCPStore(
            host,
            port,
            world_size,
            is_master=True,
            timeout=timeout,
            wait_for_workers=False,
            multi_tenant=True,
        )
    except dist.DistNetworkError as err:
        if "EADDRINUSE" not in str(err) and "address already in use" not in str(err).lower():
            raise
        return None
    store.set(SERVED_KEY, "1")
    return store


def _connect(host: str, port: int, launch: LaunchEnv, wait: timedelta) -> dist.Store:
    try:
        # One blocking connect: a rank 0 that never comes is waited for until ``wait``
        # (cut into slices, each timed-out try had torch print an error and a C++ backtrace).
        store = dist.TCPStore(host, port, launch.world_size, is_master=False, timeout=wait)
    except (dist.DistError, RuntimeError) as err:
        if launch.rank:
            raise
        raise LaunchError(
            f"MASTER_PORT {port} on {host} is taken by a program that is not a PyTorch "
            f"process group ({str(err).splitlines()[0]}): set MASTER_PORT to a free port"
        ) from None
    if launch.rank == 0:
        if store.check([SERVED_KEY]):
            raise LaunchError(
                f"MASTER_PORT {port} on {host} is already used by another training job: "
                "give this job another MASTER_PORT"
            )
        log.info(
            "MASTER_PORT %d is held by the launcher's own process group (it called "
            "init_process_group before starting the trainer): the trainer's %d ranks meet "
            "through that store",
            port,
            launch.world_size,
        )
    return store
