"""A writer's ``log_dir``: TensorBoard's default name, one that holds a run, and its writing run.

TensorBoard names a writer's directory ``runs/<date>_<host><comment>`` when none
is given, and merges every writer of one directory into one run. A second
experiment given the first's directory mixes two runs' curves and options, so
the writer says so once, when it opens. The directory is the store, opened as every
writer's is, through a :class:`~trainer.training.writing_run.WritingRun`.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime
from pathlib import Path
from typing import Any

from snapshot_store.format import frames as fmt
from trainer.training.run_alerts import run_alerts
from trainer.training.writing_run import OpenStore, WritingRun
from transfer_plugins.runner import resolve_hook, run_preflight

log = logging.getLogger(__name__)


def default_log_dir(comment: str) -> Path:
    """TensorBoard's default: ``runs/<date>_<host><comment>``."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return Path("runs") / f"{stamp}_{socket.gethostname()}{comment}"


def say_if_appending(store: Path) -> None:
    """One line when ``store`` holds a run that ended: this writer adds a session to it."""
    try:
        status = fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), store)
    except (OSError, fmt.StoreError):
        return  # a new store (or one the recorder will say is damaged)
    state = status.get("state")
    if state in fmt.ENDED_STATES:
        log.warning(
            "%s holds a run that %s: this writer appends to it as a new session, as "
            "TensorBoard merges writers of one log_dir; give a new log_dir for a new run",
            store,
            "was stopped" if state == "stopped" else state,
        )


def log_dir_run(
    log_dir: Path,
    open_store: OpenStore,
    remote_transfer_cmd: str | None,
    transfer_root: str | os.PathLike[str] | None,
    recorder_kwargs: dict[str, Any] | None = None,
) -> WritingRun:
    """``log_dir``'s writing run; its files are handed to the hook ``remote_transfer_cmd``
    names (a ``module.func``, as the trainer's ``--remote-transfer-cmd``; checked first: a
    bad hook touches nothing), with paths relative to ``transfer_root`` (default:
    ``log_dir``'s parent, so the run's folder name is kept). The writer's alert options in
    ``recorder_kwargs`` become its recorder's ``alerts`` (:func:`alerts_of`), checked first too."""
    if recorder_kwargs is not None:
        alerts_of(recorder_kwargs)
    hook = None
    if remote_transfer_cmd:
        hook = resolve_hook(remote_transfer_cmd)
        run_preflight(hook, remote_transfer_cmd)
    root = Path(transfer_root) if transfer_root is not None else log_dir.parent
    return WritingRun(log_dir, open_store, hook=hook, spec=remote_transfer_cmd, transfer_root=root)


def alerts_of(recorder_kwargs: dict[str, Any]) -> None:
    """A writer's ``alert_rules=``, ``alert_webhook=`` and ``alert_cmd=`` (the trainer's
    ``--alert-rule``, ``$ALERT_WEBHOOK_URL``, ``--alert-cmd``) as its recorder's ``alerts``:
    rules judged on the writer thread (:mod:`trainer.training.run_alerts`). ValueError in one
    line when they can not work: before the store is touched."""
    rules = recorder_kwargs.pop("alert_rules", ())
    webhook, command = (
        recorder_kwargs.pop("alert_webhook", None),
        recorder_kwargs.pop("alert_cmd", None),
    )
    if isinstance(rules, str):
        rules = [rules]  # one rule given as its text
    settings = run_alerts(list(rules), command, webhook)
    if settings is not None:
        recorder_kwargs["alerts"] = settings
