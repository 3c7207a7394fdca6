"""``python -m trainer`` / ``trainer``: train, make-dataset, launch and sync.

``train`` is a thin layer over :func:`trainer.loop.fit`: it checks the input,
builds the model, optimizer and schedule from the options and hands them over.
Every check that can fail on bad input runs before a process group exists.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

log = logging.getLogger(__name__)

COMMANDS = {
    "train": "train a model on an image folder (one process, DataParallel, or each rank of a DDP job)",
    "make-dataset": "write a small generated image folder of noisy shapes",
    "launch": "start torchrun for you: launch --nproc-per-node N <train options>",
    "sync": "send a run's files to --remote-transfer-cmd after the fact",
}


class UsageError(Exception):
    """Bad input found before training; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) so a mistake reads as one clear line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


# --- option types ----------------------------------------------------------------------------

_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}


def str2bool(text: str) -> bool:
    """True/False in any letter case (and 1/0, yes/no, on/off), as click's ``type=bool``."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (use True or False)")


def _bounded(kind: Callable, low: float, what: str) -> Callable[[str], float]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r} must be {what} >= {low}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


positive_int = _bounded(int, 1, "an integer")
count_int = _bounded(int, 0, "an integer")
non_negative_float = _bounded(float, 0.0, "a number")


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number > 0")
    return value


def gpu_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a GPU id (an integer, -1 for CPU)") from None
    if value < -1:
        raise argparse.ArgumentTypeError(f"{text!r}: GPU ids are 0 or more, or -1 for CPU")
    return value


# --- train -----------------------------------------------------------------------------------


def train_parser(prog: str = "trainer train") -> argparse.ArgumentParser:
    """Every option of ``train`` (also used by ``launch`` to check options before starting)."""
    p = _Parser(prog=prog, description=COMMANDS["train"] + ". Under torchrun, Slurm (srun) or a "
                "Kubernetes launcher each process runs this same command; one rank records.",
                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    data = p.add_argument_group("data")
    data.add_argument("--dataroot", required=True,
                      help="image folder with train/<class>/*.png|jpg and val/<class>/...")
    data.add_argument("--image-size", type=positive_int, default=None,
                      help="resize images to this square size (default: as stored)")
    data.add_argument("--num-workers", type=count_int, default=0, help="DataLoader worker processes")
    run = p.add_argument_group("run")
    run.add_argument("--name", default="experiment", help="run name: the run dir is CHECKPOINTS_DIR/NAME")
    run.add_argument("--checkpoints-dir", default="./checkpoints",
                     help="where run dirs (checkpoints, loss_log.txt, pickle/ store) go")
    run.add_argument("--gpu-ids", type=gpu_id, action="append", default=None, metavar="ID",
                     help="repeatable; -1 = CPU. Under a launcher each process uses "
                          "gpu_ids[local_rank]; several ids without one use DataParallel "
                          "(default: GPU local_rank if CUDA is available, else CPU)")
    run.add_argument("--seed", type=int, default=0, help="weights are initialised with SEED; rank r "
                     "then seeds SEED+r; the sampler shuffles with SEED")
    run.add_argument("--continue-train", action="store_true",
                     help="resume from CHECKPOINTS_DIR/NAME/latest.pth (model, optimizer, "
                          "schedule, step, RNG); the recorded curves continue")
    run.add_argument("--amp", choices=["off", "bf16", "fp16"], default="off",
                     help="mixed precision autocast (fp16 needs a GPU)")
    optim = p.add_argument_group("optimisation")
    optim.add_argument("--batch-size", type=positive_int, default=32,
                       help="per process; the effective batch size is this times the number of "
                            "processes (with DataParallel it is the effective batch size)")
    optim.add_argument("--n-epochs", type=positive_int, default=10, help="epochs to train in total")
    optim.add_argument("--optimizer", choices=["adam", "sgd"], default="adam", help="optimizer")
    optim.add_argument("--lr", type=positive_float, default=0.005, help="initial learning rate")
    optim.add_argument("--momentum", type=non_negative_float, default=0.9, help="SGD momentum")
    optim.add_argument("--weight-decay", type=non_negative_float, default=0.0, help="weight decay")
    optim.add_argument("--lr-policy", choices=["constant", "step", "cosine", "plateau"],
                       default="cosine", help="learning-rate schedule, stepped once per epoch "
                       "(cosine: to 0 over --n-epochs; step: x LR_GAMMA every LR_DECAY_EPOCHS; "
                       "plateau: x LR_GAMMA when the validation loss stalls)")
    optim.add_argument("--lr-decay-epochs", type=positive_int, default=5,
                       help="step policy: epochs between decays; plateau: patience")
    optim.add_argument("--lr-gamma", type=positive_float, default=0.1,
                       help="step and plateau policies: decay factor")
    optim.add_argument("--lr-scaling", choices=["none", "linear", "sqrt"], default="none",
                       help="scale --lr with the number of processes (linear: x N, sqrt: x sqrt(N))")
    optim.add_argument("--patience", type=count_int, default=0,
                       help="early stopping: epochs without validation-loss improvement (0: never)")
    optim.add_argument("--min-delta", type=non_negative_float, default=0.0,
                       help="early stopping: smallest decrease that counts as an improvement")
    out = p.add_argument_group("logging and checkpoints")
    out.add_argument("--print-freq", type=positive_int, default=10,
                     help="steps between recorded (all-rank averaged) train losses and log lines")
    out.add_argument("--display-freq", type=count_int, default=50,
                     help="steps between recorded sample-prediction images (0: never)")
    out.add_argument("--save-epoch-freq", type=count_int, default=5,
                     help="epochs between epoch_N.pth checkpoints (latest.pth: every epoch)")
    out.add_argument("--save-latest-freq", type=count_int, default=0,
                     help="also save latest.pth every this many steps, for mid-epoch resume (0: off)")
    out.add_argument("--remote", type=str2bool, default=False, metavar="{True,False}",
                     help="True: open no visdom connection, only write the snapshot store for a "
                          "visualizer elsewhere; False: also show the plots live in visdom")
    out.add_argument("--remote-transfer-cmd", default=None, metavar="MODULE.FUNC",
                     help="a function called with the path of every written file "
                          "(e.g. mysave.save_to_s3, with mysave.py in the working directory)")
    out.add_argument("--display-server", default="http://localhost", help="visdom server (--remote False)")
    out.add_argument("--display-port", type=positive_int, default=8097, help="visdom port (--remote False)")
    out.add_argument("--display-env", default=None, help="visdom environment (default: NAME)")
    return p


def check_run_dir(checkpoints_dir: str, name: str) -> Path:
    """Create ``checkpoints_dir/name`` and prove it writable, on every rank, before training."""
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise UsageError(f"--name {name!r}: use a plain directory name")
    run_dir = Path(checkpoints_dir) / name
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"--checkpoints-dir {checkpoints_dir}: can not write {run_dir} "
                         f"({err.strerror or err})") from None
    return run_dir


def _configure_logging(master: bool) -> None:
    logging.basicConfig(level=logging.INFO if master else logging.ERROR,
                        format="%(asctime)s %(message)s", datefmt="%H:%M:%S", force=True)
    # boto3 announces at INFO where it found credentials: noise in a training log.
    for noisy in ("boto3", "botocore", "s3transfer", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def build_optimizer(opts: argparse.Namespace, params, lr: float):
    import torch

    if opts.optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=opts.momentum, weight_decay=opts.weight_decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=opts.weight_decay)


def build_scheduler(opts: argparse.Namespace, optimizer):
    from torch.optim import lr_scheduler

    if opts.lr_policy == "cosine":
        return lr_scheduler.CosineAnnealingLR(optimizer, T_max=opts.n_epochs)
    if opts.lr_policy == "step":
        return lr_scheduler.StepLR(optimizer, step_size=opts.lr_decay_epochs, gamma=opts.lr_gamma)
    if opts.lr_policy == "plateau":
        return lr_scheduler.ReduceLROnPlateau(optimizer, factor=opts.lr_gamma,
                                              patience=opts.lr_decay_epochs)
    return None


def train(argv: Sequence[str]) -> int:
    """``trainer train``: check everything, build the parts, run :func:`trainer.loop.fit`."""
    opts = train_parser().parse_args(argv)
    from . import data

    datasets = data.load_datasets(opts.dataroot, opts.image_size)
    run_dir = check_run_dir(opts.checkpoints_dir, opts.name)
    # torch only now: the common mistakes above are reported without its import time.
    from torch import nn

    from . import checkpoint, distributed
    from .loop import LATEST, fit, scale_lr
    from .models import SmallCNN, accuracy, prediction_grid

    env = distributed.detect()
    distributed.select_devices(opts.gpu_ids, env)  # an absent GPU fails here, on every rank
    if opts.continue_train and not (run_dir / LATEST).exists():
        raise UsageError(f"--continue-train: no checkpoint {run_dir / LATEST} to resume from")
    if opts.amp == "fp16" and distributed.select_devices(opts.gpu_ids, env).device.type != "cuda":
        raise UsageError("--amp fp16 needs a GPU; use --amp bf16 or off on the CPU")
    _configure_logging(env.master_process)

    checkpoint.seed_everything(opts.seed)  # the same initial weights on every rank
    model = SmallCNN(num_classes=len(datasets["train"].classes))
    lr = scale_lr(opts.lr, env.world_size, opts.lr_scaling)
    optimizer = build_optimizer(opts, model.parameters(), lr)
    result = fit(
        model, nn.CrossEntropyLoss(), optimizer, datasets,
        batch_size=opts.batch_size, n_epochs=opts.n_epochs,
        scheduler=build_scheduler(opts, optimizer), metrics={"accuracy": accuracy},
        patience=opts.patience, min_delta=opts.min_delta,
        checkpoints_dir=opts.checkpoints_dir, name=opts.name,
        remote=opts.remote, remote_transfer_cmd=opts.remote_transfer_cmd,
        device=opts.gpu_ids, continue_train=opts.continue_train,
        print_freq=opts.print_freq, display_freq=opts.display_freq,
        save_epoch_freq=opts.save_epoch_freq, save_latest_freq=opts.save_latest_freq,
        amp=opts.amp, seed=opts.seed, num_workers=opts.num_workers, display_fn=prediction_grid,
        display_server=opts.display_server, display_port=opts.display_port,
        display_env=opts.display_env,
        options={**vars(opts), "world_size": env.world_size, "scaled_lr": lr,
                 "classes": datasets["train"].classes},
        env=env,
    )
    if env.master_process:
        best = (f"best validation loss {result.best_value:.4f} at epoch {result.best_epoch}"
                if result.best_value is not None else "no validation set")
        accuracy_values = result.values("metric/accuracy")
        final = f", final accuracy {accuracy_values[-1]:.3f}" if accuracy_values else ""
        log.info("done: %d epochs, %d steps%s; %s; checkpoints and store in %s",
                 result.epochs_completed, result.global_step, final, best, result.run_dir)
    return 0


# --- make-dataset, launch, sync ----------------------------------------------------------------


def make_dataset(argv: Sequence[str]) -> int:
    """``trainer make-dataset DIR``: a generated image folder for demos and tests."""
    p = _Parser(prog="trainer make-dataset", description=COMMANDS["make-dataset"] +
                " (DIR/train/<shape>/*.png and DIR/val/<shape>/*.png)",
                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("dir", help="output directory")
    p.add_argument("--classes", type=positive_int, default=4, help="number of shape classes (2-6)")
    p.add_argument("--train-per-class", type=positive_int, default=400, help="training images per class")
    p.add_argument("--val-per-class", type=positive_int, default=100, help="validation images per class")
    p.add_argument("--image-size", type=positive_int, default=32, help="square image size in pixels")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--force", action="store_true", help="write into a non-empty directory")
    opts = p.parse_args(argv)
    from .data import SHAPES, make_dataset as write_dataset

    out = Path(opts.dir)
    if out.exists() and any(out.iterdir()) and not opts.force:
        raise UsageError(f"{out} exists and is not empty; pass --force to write into it")
    if not 2 <= opts.classes <= len(SHAPES):
        raise UsageError(f"--classes {opts.classes}: choose 2 to {len(SHAPES)}")
    counts = write_dataset(out, opts.classes, opts.train_per_class, opts.val_per_class,
                           opts.image_size, opts.seed)
    print(f"wrote {counts['train']} training and {counts['val']} validation images "
          f"({opts.classes} classes, {opts.image_size}x{opts.image_size}) to {out}")
    return 0


def torchrun_command(nproc_per_node: int, train_argv: Sequence[str], nnodes: int = 1,
                     node_rank: int = 0, master_addr: str | None = None,
                     master_port: int | None = None, max_restarts: int = 0) -> list[str]:
    """The torchrun command line that runs ``trainer train`` in every process."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc_per_node}",
           f"--max-restarts={max_restarts}"]
    if nnodes == 1 and master_addr is None:
        cmd.append("--standalone")  # picks a free local port for the rendezvous
    else:
        cmd += [f"--nnodes={nnodes}", f"--node-rank={node_rank}",
                f"--master-addr={master_addr or '127.0.0.1'}", f"--master-port={master_port or 29500}"]
    return [*cmd, "-m", "trainer", "train", *train_argv]


def launch(argv: Sequence[str]) -> int:
    """``trainer launch --nproc-per-node N <train options>``: check, then become torchrun."""
    p = _Parser(prog="trainer launch", allow_abbrev=False,
                description=COMMANDS["launch"] + ". Options other than these are train options "
                "(see trainer train --help), checked before torchrun starts.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=positive_int, required=True,
                   help="processes on this node (one per GPU, or CPU workers with gloo)")
    p.add_argument("--nnodes", type=positive_int, default=1, help="number of nodes")
    p.add_argument("--node-rank", "--node_rank", type=count_int, default=0, help="this node's rank")
    p.add_argument("--master-addr", "--master_addr", default=None, help="rank 0 node's address")
    p.add_argument("--master-port", "--master_port", type=positive_int, default=None,
                   help="rank 0 node's port")
    p.add_argument("--max-restarts", "--max_restarts", type=count_int, default=0,
                   help="restart the worker group this many times after a failure (resumes "
                        "from latest.pth)")
    args, train_argv = p.parse_known_args(argv)
    opts = train_parser("trainer launch ... train options:").parse_args(train_argv)
    from . import data, distributed

    data.check_dataroot(opts.dataroot)
    distributed.check_gpu_ids(opts.gpu_ids)
    gpus = [i for i in opts.gpu_ids or [] if i >= 0]
    if gpus and len(gpus) < args.nproc_per_node:
        raise UsageError(f"--gpu-ids {gpus}: {args.nproc_per_node} processes need one id each")
    check_run_dir(opts.checkpoints_dir, opts.name)
    cmd = torchrun_command(args.nproc_per_node, train_argv, args.nnodes, args.node_rank,
                           args.master_addr, args.master_port, args.max_restarts)
    print("launching:", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    os.execv(sys.executable, cmd)  # torchrun takes over this process (signals go straight to it)
    return 0  # not reached


def sync(argv: Sequence[str]) -> int:
    """``trainer sync RUN_DIR --remote-transfer-cmd ...``, provided by :mod:`trainer.sync`."""
    try:
        module = importlib.import_module("trainer.sync")
    except ModuleNotFoundError as err:
        if err.name != "trainer.sync":
            raise
        raise UsageError("the sync command is not available in this installation") from None
    return int(module.main(list(argv)) or 0)


def _top_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="trainer", description="Train PyTorch models and watch them live from anywhere.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return p


_HANDLERS: dict[str, Callable[[Sequence[str]], int]] = {
    "train": train, "make-dataset": make_dataset, "launch": launch, "sync": sync,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m trainer`` and the ``trainer`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        _top_parser().print_help(sys.stderr)
        return 2
    if argv[0] not in _HANDLERS:
        _top_parser().parse_args(argv)  # prints help or a one-line error and exits
        return 2
    try:
        return _HANDLERS[argv[0]](argv[1:])
    except Exception as err:
        if not _is_user_error(err):
            raise
        print(f"trainer {argv[0]}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"trainer {argv[0]}: interrupted", file=sys.stderr)
        return 130


def _is_user_error(err: Exception) -> bool:
    """Errors that mean "fix your input", as opposed to bugs (which keep their traceback)."""
    from snapshot_store import StoreError
    from transfer_plugins.runner import TransferSpecError

    from .data import DataError

    kinds: list[type] = [UsageError, DataError, TransferSpecError, StoreError]
    distributed = sys.modules.get("trainer.distributed")  # imported only if torch was
    if distributed is not None:
        kinds.append(distributed.LaunchError)
    return isinstance(err, tuple(kinds))
