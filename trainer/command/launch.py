"""``trainer launch --nproc-per-node N <train options>``: check everything, then run torchrun.

torchrun runs in this process (its own entry point, as the ``torchrun`` script
calls it), so that its end is ours to report: Ctrl-C or SIGTERM exits 130/143
and a failed worker exits with the worker's status, each with one line instead
of torchrun's traceback. On one node the rendezvous is addressed on loopback.
"""

from __future__ import annotations

import signal
import socket
import sys
import uuid
from collections.abc import Sequence

from run_core.exit_codes import ExitCode
from run_core.launch_env import DEFAULT_PORT
from run_core.redaction import redact_text
from trainer.command.options import Parser, parse_train_args
from trainer.training.config import UsageError

LOOPBACK = "127.0.0.1"
# Exit statuses of a worker that torchrun stopped after another one failed (SIGTERM, then SIGKILL).
_STOPPED = {-signal.SIGTERM, -signal.SIGKILL, ExitCode.TERMINATED, 128 + signal.SIGKILL}
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
        # Not --standalone: its "localhost:0" names whatever localhost resolves to.
        port = master_port or free_loopback_port()
        cmd += [
            "--nnodes=1",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={LOOPBACK}:{port}",
            f"--rdzv-id={uuid.uuid4().hex}",
            f"--local-addr={LOOPBACK}",  # the workers' MASTER_ADDR (else this host's FQDN)
        ]
    else:
        cmd += [
            f"--nnodes={nnodes}",
            f"--node-rank={node_rank}",
            f"--master-addr={master_addr or LOOPBACK}",
            f"--master-port={master_port or DEFAULT_PORT}",
        ]
    return [*cmd, "-m", "trainer", "train", *train_argv]


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (the rendezvous binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def run_torchrun(cmd: Sequence[str]) -> int:
    """Run torchrun's entry point in this process with ``cmd``'s arguments; its exit status.

    A stop by signal and a failed worker end in one line (the workers' own output,
    above it, says why); torchrun's traceback would only repeat that.
    """
    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    try:
        run(parse_args(list(cmd[3:])))  # after "python -m torch.distributed.run"
    except SignalException as err:
        interrupted = err.sigval == signal.SIGINT
        print(f"trainer launch: {'interrupted' if interrupted else 'terminated'}", file=sys.stderr)
        return ExitCode.INTERRUPTED if interrupted else ExitCode.TERMINATED
    except ChildFailedError as err:
        # The cause: the first rank to fail, not one torchrun stopped because of it.
        rank, failure = min(
            err.failures.items(),
            key=lambda item: (item[1].exitcode in _STOPPED, item[1].timestamp, item[0]),
        )
        code = failure.exitcode if failure.exitcode > 0 else 128 - failure.exitcode
        print(
            f"trainer launch: worker rank {rank} (pid {failure.pid}) exited with status {code}",
            file=sys.stderr,
        )
        return code
    return ExitCode.OK


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
    """Check the launch and train options, then run torchrun; its exit status."""
    args, train_argv = _parser().parse_known_args(argv)
    for flag, low in (("nproc_per_node", 1), ("nnodes", 1), ("node_rank", 0), ("max_restarts", 0)):
        if getattr(args, flag) < low:
            raise UsageError(
                f"--{flag.replace('_', '-')} {getattr(args, flag)}: must be at least {low}"
            )
    config, recipe = parse_train_args(train_argv, prog="trainer launch ... train options:")
    from run_core.launch_env import LaunchEnv
    from trainer.command import data
    from trainer.ranks import distributed
    from trainer.training.checks import preflight

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
    print("launching:", redact_text(" ".join(cmd[1:])), file=sys.stderr, flush=True)
    return run_torchrun(cmd)
