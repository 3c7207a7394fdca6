"""How a run ended, in one vocabulary: the state its store's status is closed with.

Every writer of the store (the recorder's context, the trainer, the
SummaryWriter, each framework adapter, the W&B-style module) closes it with
:func:`ended_state` of how the run ended, so one ending reads the same whatever
wrote the run (the table is in docs/store-format.md).
"""

from __future__ import annotations

import signal

from run_core.exit_codes import ExitCode

# Someone asked the run to stop: Ctrl-C, or a scheduler's SIGTERM (torchrun, Slurm, Kubernetes).
_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
# The exit statuses of those signals: 128 + the signal from a shell, minus it from subprocess.
_STOP_CODES = frozenset({ExitCode.INTERRUPTED, ExitCode.TERMINATED, *(-s for s in _STOP_SIGNALS)})


def ended_state(how: BaseException | signal.Signals | int | None) -> str:
    """The state a run ends in: ``finished``, ``stopped`` or ``failed``.

    ``how`` is the exception the run ended on (None: it ended normally), the
    signal that ended it, or its exit status. KeyboardInterrupt, SIGINT, SIGTERM
    and the statuses 130 and 143 (128 + the signal; -2 and -15 as ``subprocess``
    reports a process the signal killed) are ``stopped``; no exception and
    status 0 are ``finished``; any other exception, signal or status is
    ``failed``. A :class:`SystemExit` ends as its code says (``sys.exit()`` is
    0, a message is 1), as the process would exit with it.
    """
    if isinstance(how, SystemExit):
        how = _exit_status(how.code)
    elif isinstance(how, BaseException):
        return "stopped" if isinstance(how, KeyboardInterrupt) else "failed"
    elif isinstance(how, signal.Signals):
        return "stopped" if how in _STOP_SIGNALS else "failed"
    if not how:
        return "finished"
    return "stopped" if how in _STOP_CODES else "failed"


def _exit_status(code: object) -> int:
    """The status Python exits with for ``sys.exit(code)``."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1
