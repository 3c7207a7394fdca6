"""``trainer launch --nproc-per-node N <train options>``: check everything, then become torchrun."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from snapshot_store.rank import DEFAULT_PORT

from .options import Parser, UsageError, parse_train_args

DESCRIPTION = (
    "start torchrun for you: launch --nproc-per-node N <train options>. Options other "
    "than these are train options (see trainer train --help), checked before torchrun "
    "starts."
)


def torchrun_command(
    nproc_per_node: int,
    train_argv: Sequence[str],
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str | None = None,
    master_port: int | None = None,
    max_restarts: int = 0,
) -> list[str]:
    """The torchrun command line that runs ``trainer train`` in every process."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={nproc_per_node}",
        f"--max-restarts={max_restarts}",
    ]
    if nnodes == 1 and master_addr is None:
        cmd.append("--standalone")  # picks a free local port for the rendezvous
    else:
        cmd += [
            f"--nnodes={nnodes}",
            f"--node-rank={node_rank}",
            f"--master-addr={master_addr or '127.0.0.1'}",
            f"--master-port={master_port or DEFAULT_PORT}",
        ]
    return [*cmd, "-m", "trainer", "train", *train_argv]


def _parser() -> Parser:
    p = Parser(prog="trainer launch", description=DESCRIPTION)
    p.add_argument(
        "--nproc-per-node",
        "--nproc_per_node",
        type=int,
        required=True,
        help="processes on this node (one per GPU, or CPU workers with gloo)",
    )
    p.add_argument("--nnodes", type=int, default=1, help="number of nodes (default: 1)")
    p.add_argument(
        "--node-rank", "--node_rank", type=int, default=0, help="this node's rank (default: 0)"
    )
    p.add_argument("--master-addr", "--master_addr", default=None, help="rank 0 node's address")
    p.add_argument(
        "--master-port", "--master_port", type=int, default=None, help="rank 0 node's port"
    )
    p.add_argument(
        "--max-restarts",
        "--max_restarts",
        type=int,
        default=0,
        help="restart the worker group this many times after a failure (resumes "
        "from latest.pth; default: 0)",
    )
    return p


def main(argv: Sequence[str]) -> int:
    """Check the launch and train options, then replace this process with torchrun."""
    args, train_argv = _parser().parse_known_args(argv)
    for flag, low in (("nproc_per_node", 1), ("nnodes", 1), ("node_rank", 0), ("max_restarts", 0)):
        if getattr(args, flag) < low:
            raise UsageError(
                f"--{flag.replace('_', '-')} {getattr(args, flag)}: must be at least {low}"
            )
    config, recipe = parse_train_args(train_argv, prog="trainer launch ... train options:")
    from snapshot_store import LaunchEnv

    from . import data, distributed
    from .checks import preflight

    data.check_dataroot(recipe.dataroot)
    distributed.check_gpu_ids(config.gpu_ids)
    gpus = [i for i in config.gpu_ids or () if i >= 0]
    if gpus and len(gpus) < args.nproc_per_node:
        raise UsageError(f"--gpu-ids {gpus}: {args.nproc_per_node} processes need one id each")
    preflight(config, LaunchEnv())  # as rank 0 will see it: run dir, resume, transfer hook
    cmd = torchrun_command(
        args.nproc_per_node,
        train_argv,
        args.nnodes,
        args.node_rank,
        args.master_addr,
        args.master_port,
        args.max_restarts,
    )
    print("launching:", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    os.execv(sys.executable, cmd)  # torchrun takes over this process (signals go straight to it)
    return 0  # not reached
