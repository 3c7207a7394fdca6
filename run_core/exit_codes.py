"""The exit statuses of every command of the project, in one table.

Each CLI (``trainer``, ``python -m visualizer``, ``run_visualizer_local.py``,
``trainer sync``) returns one of these, so scripts and schedulers can tell a
typo from a failed run from a server that is down.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit statuses, documented in docs/bad-input.md."""

    OK = 0
    FAILED = 1  # the job started and failed: training raised
    USAGE = 2  # bad input found before anything started (argparse uses 2 as well)
    NO_DATA = 3  # nothing to read at the location given
    UNAVAILABLE = 4  # a server the command needs does not answer (visdom, S3)
    UPLOAD_INCOMPLETE = 5  # the job ran, but files were left unsent: `trainer sync` sends them
    INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT
    TERMINATED = 143  # SIGTERM: 128 + SIGTERM
