"""Sending a run's files through its transfer hook: the drain at exit, and ``trainer sync``.

``python -m trainer sync <run dir> --remote-transfer-cmd module.func`` sends a
whole run again: for recovery after an outage (the files a training run could
not send) or for publishing an old run. Every file under the run dir goes
through the same hook runner as during training; sending twice gives the same
result. Both drains show what is left every few seconds, and Ctrl-C skips them,
leaving the list of unsent files and the command that sends them later.
"""

from __future__ import annotations

import logging
import shlex
import time
from pathlib import Path

from run_core.values import amount
from transfer_plugins.runner import TRANSFER_DRAIN_S, TransferRunner

log = logging.getLogger("trainer.training.sync")

# A progress line at most this often while files are still being sent.
PROGRESS_EVERY_S = 5.0
# The drain's own lines grow loss_log.txt after its first copy; a quiet resend is final
# unless something else logs into it meanwhile.
LOG_RESENDS = 3


def run_files(run_dir: Path) -> list[Path]:
    """Every regular file of a run, skipping temp files of atomic writes."""
    return sorted(p for p in run_dir.rglob("*") if p.is_file() and not p.name.startswith("."))


def sync_command(run_dir: Path, spec: str) -> str:
    """The shell command that sends ``run_dir`` through ``spec``."""
    return f"python -m trainer sync {shlex.quote(str(run_dir))} --remote-transfer-cmd {spec}"


def _wait_for(transfer: TransferRunner, deadline: float, quiet: bool = False) -> None:
    """Wait until ``transfer`` sent everything or ``deadline``, saying what is left.

    ``quiet``: say nothing (sending the log file again: a line would change it once more).
    """
    if quiet:
        transfer.drain(max(0.0, deadline - time.monotonic()))
        return
    count, size = transfer.backlog()
    if count:
        log.info(
            "sending %d file(s) (%s) through %s before exiting, for up to %.0f s; Ctrl-C skips",
            count,
            amount(size),
            transfer.name,
            deadline - time.monotonic(),
        )
    while not transfer.drain(max(0.0, min(PROGRESS_EVERY_S, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            break
        count, size = transfer.backlog()
        failing = transfer.failing()
        log.info(
            "still sending through %s: %d file(s), %s left%s; Ctrl-C skips",
            transfer.name,
            count,
            amount(size),
            f" ({failing} failing, retried with backoff)" if failing else "",
        )


def send_remaining(
    transfer: TransferRunner,
    run_dir: Path | None,
    timeout: float = TRANSFER_DRAIN_S,
    log_file: Path | None = None,
) -> list[Path]:
    """Send what ``transfer`` still holds, for up to ``timeout`` s; return what is left unsent.

    The one drain of every run's close (the trainer's session, the framework
    adapters) and of ``trainer sync``. Says what is left every
    :data:`PROGRESS_EVERY_S`; Ctrl-C stops waiting. Files left are listed, with the
    command that sends them later when the run's dir ``run_dir`` is known.
    ``log_file`` (the run's ``loss_log.txt``) is sent last, and again, quietly, if the wait
    logged into it (an outage's progress lines): the copy sent is the whole file.
    """
    deadline = time.monotonic() + timeout
    try:
        for again in range(LOG_RESENDS + 1):
            size = log_file.stat().st_size if log_file is not None and log_file.exists() else None
            if log_file is not None and size is not None:
                transfer.submit(log_file, closed=True)
            _wait_for(transfer, deadline, quiet=bool(again))
            if size is None or log_file is None or log_file.stat().st_size == size:
                break
            if time.monotonic() >= deadline:
                break
    except KeyboardInterrupt:
        log.warning("Ctrl-C: no longer waiting for %s", transfer.name)
    left = transfer.stop()
    if left:
        _report_unsent(transfer.name, left, run_dir)
    return left


def _report_unsent(name: str, left: list[Path], run_dir: Path | None) -> None:
    """Name the files ``name`` did not send, and how to send them later where that is known."""
    # An adapter's store may lie anywhere below its transfer root: no run dir, no command.
    later = (
        f". Once the destination is reachable, run: {sync_command(run_dir, name)}"
        if run_dir is not None
        else ""
    )
    log.warning(
        "%d file(s) were not transferred by %s: %s%s",
        len(left),
        name,
        ", ".join(map(str, left)),
        later,
    )


def sync(run_dir: Path, spec: str, timeout: float = 3600.0) -> list[Path]:
    """Send every file of ``run_dir`` through ``spec``; return the files not sent."""
    runner = TransferRunner.from_spec(spec, run_dir.resolve().parent)
    files = run_files(run_dir)
    for path in files:
        runner.submit(path, closed=True)
    left = send_remaining(runner, run_dir, timeout)
    log.info("sent %d of %d files of %s via %s", len(files) - len(left), len(files), run_dir, spec)
    return left
