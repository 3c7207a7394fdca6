"""``python -m trainer`` / ``trainer``: train, make-dataset, launch and sync.

``train`` is a thin layer over :func:`trainer.fit`: it reads the options (one
:class:`~trainer.training.config.RunConfig`), builds the model, optimizer and schedule
and hands them over. Every check that can fail on bad input runs before a
process group exists; every command exits with a status of
:class:`run_core.exit_codes.ExitCode`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from run_core.exit_codes import ExitCode
from run_core.launch_env import LaunchEnv, LaunchError
from run_core.redaction import redact_text
from run_core.run_lock import RunLockError
from snapshot_store import StoreError
from trainer.command.data import DataError
from trainer.command.options import Parser, parse_train_args
from trainer.ranks.distributed import RankLostError
from trainer.training.config import UsageError
from trainer.training.disk_full import DiskFullError
from trainer.training.interrupts import Terminated
from transfer_plugins.runner import TransferSpecError

if TYPE_CHECKING:  # the loop imports torch: `trainer train` imports it only once the data is read
    from trainer.command.data import ImageFolder
    from trainer.command.recipe import RecipeConfig
    from trainer.training.config import RunConfig
    from trainer.training.loop import FitResult

log = logging.getLogger(__name__)

COMMANDS = {
    "train": "train a model on an image folder (one process, DataParallel, or each rank of a DDP job)",
    "make-dataset": "write a small generated image folder of noisy shapes",
    "launch": "start torchrun for you: launch --nproc-per-node N <train options>",
    "sync": "send a run's files to --remote-transfer-cmd after the fact",
}

# Errors that mean "fix your input", as opposed to bugs (which keep their traceback).
USER_ERRORS = (UsageError, DataError, TransferSpecError, StoreError, LaunchError, RunLockError)


def train(argv: Sequence[str]) -> int:
    """``trainer train``: read the options, build the parts, run :func:`trainer.fit`."""
    config, recipe = parse_train_args(
        argv,
        description=COMMANDS["train"] + ". Under torchrun, "
        "Slurm (srun) or a Kubernetes launcher each process runs "
        "this same command; rank 0 records.",
    )
    from trainer.command import data

    datasets = data.load_datasets(recipe.dataroot, recipe.image_size)
    # torch only now: the common mistakes above are reported without its import time.
    from trainer.ranks import distributed
    from trainer.training import console

    launch = distributed.detect()
    console.configure_logging(launch.is_rank_zero)  # other ranks: errors only
    result = _fit_recipe(recipe, config, datasets, launch)
    _log_done(result)  # an info line: said by rank 0 alone
    if result.unsent:  # listed with the sync command by the drain, just above
        log.error(
            "%d file(s) of the run were not uploaded: exit status %d",
            len(result.unsent),
            ExitCode.UPLOAD_INCOMPLETE,
        )
        return ExitCode.UPLOAD_INCOMPLETE
    return ExitCode.OK


def _fit_recipe(
    recipe: RecipeConfig, config: RunConfig, datasets: dict[str, ImageFolder], launch: LaunchEnv
) -> FitResult:
    """Build the recipe's model, optimizer and schedule, and train them with :func:`trainer.fit`."""
    from torch import nn

    from trainer.command.models import SmallCNN, accuracy, prediction_grid
    from trainer.command.recipe import build_optimizer, build_scheduler
    from trainer.training import checkpoint
    from trainer.training.fit import fit

    checkpoint.seed_everything(config.seed)  # the same initial weights on every rank
    model = SmallCNN(num_classes=len(datasets["train"].classes))
    lr = recipe.scaled_lr(launch.world_size)
    optimizer = build_optimizer(recipe, model.parameters(), lr)
    options = {
        **recipe.__dict__,
        **config.to_options(),
        "world_size": launch.world_size,
        "scaled_lr": lr,
        "classes": datasets["train"].classes,
    }
    return fit(
        model,
        nn.CrossEntropyLoss(),
        optimizer,
        datasets,
        config=config,
        scheduler=build_scheduler(recipe, optimizer, config.num_epochs),
        metrics={"accuracy": accuracy},
        display_fn=prediction_grid,
        options=options,
        launch=launch,
    )


def _log_done(result: FitResult) -> None:
    """Say how the run ended: epochs, steps, the final accuracy and the best validation loss."""
    best = (
        f"best validation loss {result.best_value:.4f} at epoch {result.best_epoch}"
        if result.best_value is not None
        else "no validation set"
    )
    accuracy_values = result.values("metric/accuracy")
    final = f", final accuracy {accuracy_values[-1]:.3f}" if accuracy_values else ""
    log.info(
        "done: %d epochs, %d steps%s; %s; checkpoints and store in %s",
        result.epochs_completed,
        result.global_step,
        final,
        best,
        result.run_dir,
    )


def make_dataset_job(argv: Sequence[str]) -> int:
    """``trainer make-dataset DIR``: a generated image folder for demos and tests."""
    p = Parser(
        prog="trainer make-dataset",
        description=COMMANDS["make-dataset"]
        + " (DIR/train/<shape>/*.png and DIR/val/<shape>/*.png)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("dir", help="output directory")
    p.add_argument("--classes", type=int, default=4, help="number of shape classes (2-6)")
    p.add_argument("--train-per-class", type=int, default=400, help="training images per class")
    p.add_argument("--val-per-class", type=int, default=100, help="validation images per class")
    p.add_argument("--image-size", type=int, default=32, help="square image size in pixels")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--force", action="store_true", help="write into a non-empty directory")
    opts = p.parse_args(argv)
    from trainer.command.data import SHAPES
    from trainer.command.data import make_dataset as write_dataset

    out = Path(opts.dir)
    if out.exists() and any(out.iterdir()) and not opts.force:
        raise UsageError(f"{out} exists and is not empty; pass --force to write into it")
    for flag in ("train_per_class", "val_per_class", "image_size"):
        if getattr(opts, flag) < 1:
            raise UsageError(
                f"--{flag.replace('_', '-')} {getattr(opts, flag)}: must be at least 1"
            )
    if not 2 <= opts.classes <= len(SHAPES):
        raise UsageError(f"--classes {opts.classes}: choose 2 to {len(SHAPES)}")
    counts = write_dataset(
        out, opts.classes, opts.train_per_class, opts.val_per_class, opts.image_size, opts.seed
    )
    print(
        f"wrote {counts['train']} training and {counts['val']} validation images "
        f"({opts.classes} classes, {opts.image_size}x{opts.image_size}) to {out}"
    )
    return 0


def launch_job(argv: Sequence[str]) -> int:
    """``trainer launch``: see :mod:`trainer.command.launch`."""
    from trainer.command.launch import main as launch_main

    return launch_main(argv)


def sync_job(argv: Sequence[str]) -> int:
    """``trainer sync``: send a run's files again; see :mod:`trainer.training.sync`."""
    from trainer.training.sync import sync as send_run

    parser = Parser(
        prog="python -m trainer sync",
        description="Send every file of a run (snapshots and checkpoints) through a transfer "
        "hook. Ctrl-C stops waiting; files left unsent are listed and exit with status 5.",
    )
    parser.add_argument("run_dir", type=Path, help="the run directory, <checkpoints_dir>/<name>")
    parser.add_argument(
        "--remote-transfer-cmd",
        "--remote_transfer_cmd",
        required=True,
        metavar="MODULE.FUNC",
        help="the hook, e.g. transfer_plugins.s3.save_to_s3 or mysave.save_to_s3",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds to keep retrying failed files (default: %(default)s)",
    )
    args = parser.parse_args(list(argv))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if not args.run_dir.is_dir():
        log.error("run directory %s does not exist; give <checkpoints_dir>/<name>", args.run_dir)
        return ExitCode.USAGE
    try:
        left = send_run(args.run_dir, args.remote_transfer_cmd, args.timeout)
    except TransferSpecError as err:
        log.error("%s", err)
        return ExitCode.USAGE
    return ExitCode.UPLOAD_INCOMPLETE if left else ExitCode.OK


def _top_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="trainer", description="Train PyTorch models and watch them live from anywhere."
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, text in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return p


_HANDLERS: dict[str, Callable[[Sequence[str]], int]] = {
    "train": train,
    "make-dataset": make_dataset_job,
    "launch": launch_job,
    "sync": sync_job,
}


def _tell(line: str) -> None:
    """``line`` on stderr in one write: a job's ranks share it, and print's two writes (the
    text, then its newline) let another rank's line in between ("...; stoppingtrainer
    train: error: ..."). A write of a line this short to a pipe is never split."""
    sys.stderr.write(f"{line}\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m trainer`` and the ``trainer`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        _top_parser().print_help(sys.stderr)
        return ExitCode.USAGE
    if argv[0] not in _HANDLERS:
        _top_parser().parse_args(argv)  # prints help or a one-line error and exits
        return ExitCode.USAGE
    try:
        return _HANDLERS[argv[0]](argv[1:])
    except USER_ERRORS as err:
        _tell(f"trainer {argv[0]}: error: {redact_text(str(err))}")
        return ExitCode.USAGE
    except (DiskFullError, RankLostError) as err:  # the job started: no traceback either
        _tell(f"trainer {argv[0]}: error: {err}")
        return ExitCode.FAILED
    except KeyboardInterrupt:
        _tell(f"trainer {argv[0]}: interrupted")
        return ExitCode.INTERRUPTED
    except Terminated:
        _tell(f"trainer {argv[0]}: terminated")
        return ExitCode.TERMINATED
