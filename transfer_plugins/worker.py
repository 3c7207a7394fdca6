"""A transfer hook in its own process, so uploads do not compete with training for the GIL.

The runner starts ``python -m transfer_plugins.worker SPEC`` and talks to it over
pipes, one JSON line per file: ``[source_path, relative_path]`` in,
``{"ok": true}`` or ``{"ok": false, "error": "..."}`` out. A plain subprocess,
not multiprocessing: nothing re-imports the user's training script.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from typing import IO


def serve(spec: str, requests: IO[str], replies: IO[str]) -> None:
    """Answer requests until ``requests`` closes."""
    from transfer_plugins.hooks import hook_caller, resolve_hook

    call = hook_caller(resolve_hook(spec))
    for line in requests:
        source, relative = json.loads(line)
        reply: dict[str, bool | str]
        try:
            call(source, relative)
            reply = {"ok": True}
        except Exception as err:  # reported to the runner, which retries with backoff
            reply = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def use_idle_cpu_only() -> None:
    """Run this process only on CPU time that everything else leaves idle.

    Linux's SCHED_IDLE class never preempts a normal task when it wakes up; a
    niced task still does, and an upload wakes up thousands of times (socket
    I/O on boto3's part threads), so beside training a niced upload still
    slowed the training step where one in SCHED_IDLE did not. Threads started
    later inherit the class. Elsewhere: nice 19.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux
        if hasattr(os, "nice"):
            os.nice(19)


def main() -> None:
    """Entry point: ``python -m transfer_plugins.worker SPEC [--idle]``."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s transfer worker: %(message)s")
    spec = sys.argv[1]
    # Ctrl-C reaches the whole terminal's process group; the runner decides when this ends
    # (it closes our input), so finish the file in hand instead of dying mid-upload.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if "--idle" in sys.argv[2:]:
        use_idle_cpu_only()
    # Replies get a private copy of stdout; whatever the hook prints goes to stderr.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    serve(spec, sys.stdin, replies)


if __name__ == "__main__":
    main()
