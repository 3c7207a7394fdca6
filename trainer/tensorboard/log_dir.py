"""TensorBoard's rules for a writer's ``log_dir``: its default name, and one that holds a run.

TensorBoard names a writer's directory ``runs/<date>_<host><comment>`` when none
is given, and merges every writer of one directory into one run. A second
experiment given the first's directory mixes two runs' curves and options, so
the writer says so once, when it opens.
"""

from __future__ import annotations

import logging
import socket
from datetime import datetime
from pathlib import Path

from run_core.launch_env import global_rank
from snapshot_store.format import frames as fmt

log = logging.getLogger(__name__)


def default_log_dir(comment: str) -> Path:
    """TensorBoard's default: ``runs/<date>_<host><comment>``."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return Path("runs") / f"{stamp}_{socket.gethostname()}{comment}"


def say_if_appending(store: Path) -> None:
    """One line when ``store`` holds a run that ended: this writer adds a session to it."""
    if global_rank() != 0:
        return
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
