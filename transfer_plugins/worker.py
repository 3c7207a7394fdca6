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
    from transfer_plugins.runner import hook_caller, resolve_hook

    call = hook_caller(resolve_hook(spec))
    for line in requests:
        source, relative = json.loads(line)
        try:
            call(source, relative)
            reply = {"ok": True}
        except Exception as err:  # reported to the runner, which retries with backoff
            reply = {"ok": False, "error": f"{type(err).__name__}: {err}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    """Entry point: ``python -m transfer_plugins.worker SPEC [NICE]``."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s transfer worker: %(message)s")
    spec, nice = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
    # Ctrl-C reaches the whole terminal's process group; the runner decides when this ends
    # (it closes our input), so finish the file in hand instead of dying mid-upload.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    # Replies get a private copy of stdout; whatever the hook prints goes to stderr.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    serve(spec, sys.stdin, replies)


if __name__ == "__main__":
    main()
