"""``python -m trainer sync <run dir> --remote-transfer-cmd module.func``: send a whole run again.

For recovery after an outage (the files a training run could not send) or for
publishing an old run. Every file under the run dir goes through the same hook
runner as during training; sending twice gives the same result.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from snapshot_store import ExitCode
from transfer_plugins.runner import TransferRunner, TransferSpecError

from .options import Parser

log = logging.getLogger("trainer.sync")


def run_files(run_dir: Path) -> list[Path]:
    """Every regular file of a run, skipping temp files of atomic writes."""
    return sorted(p for p in run_dir.rglob("*") if p.is_file() and not p.name.startswith("."))


def sync(run_dir: Path, spec: str, timeout: float = 3600.0) -> list[Path]:
    """Send every file of ``run_dir`` through ``spec``; return the files not sent."""
    runner = TransferRunner.from_spec(spec, run_dir.resolve().parent)
    files = run_files(run_dir)
    for path in files:
        runner.submit(path, closed=True)
    left = runner.close(timeout=timeout)
    log.info("sent %d of %d files of %s via %s", len(files) - len(left), len(files), run_dir, spec)
    return left


def main(argv: list[str] | None = None) -> int:
    """Command-line entry; returns the exit status."""
    parser = Parser(
        prog="python -m trainer sync",
        description="Send every file of a run (snapshots and checkpoints) through a transfer hook.",
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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if not args.run_dir.is_dir():
        log.error("run directory %s does not exist; give <checkpoints_dir>/<name>", args.run_dir)
        return ExitCode.USAGE
    try:
        left = sync(args.run_dir, args.remote_transfer_cmd, args.timeout)
    except TransferSpecError as err:
        log.error("%s", err)
        return ExitCode.USAGE
    if left:
        log.error("%d file(s) not sent: %s", len(left), ", ".join(map(str, left)))
        return ExitCode.FAILED
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
