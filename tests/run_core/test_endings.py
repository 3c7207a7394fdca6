"""run_core.endings: how a run ended -> the state its store is closed with (one table)."""

from __future__ import annotations

import signal

import pytest

from run_core.endings import ended_state
from run_core.exit_codes import ExitCode
from snapshot_store.format.frames import ENDED_STATES


class _Failure(Exception):
    pass


# docs/store-format.md's table, row by row.
TABLE = [
    (None, "finished"),
    (0, "finished"),
    (SystemExit(), "finished"),  # sys.exit()
    (SystemExit(0), "finished"),
    (KeyboardInterrupt(), "stopped"),
    (signal.SIGINT, "stopped"),
    (signal.SIGTERM, "stopped"),
    (ExitCode.INTERRUPTED, "stopped"),
    (130, "stopped"),
    (143, "stopped"),
    (-signal.SIGINT, "stopped"),  # subprocess's returncode of a process SIGINT ended
    (-signal.SIGTERM, "stopped"),
    (SystemExit(143), "stopped"),  # trainer.training.interrupts.Terminated unwinding from SIGTERM
    (RuntimeError("diverged"), "failed"),
    (_Failure(), "failed"),
    (SystemExit(1), "failed"),
    (SystemExit("bad config"), "failed"),  # Python prints it and exits 1
    (1, "failed"),
    (2, "failed"),  # a usage error: not SIGINT, whose number it shares
    (15, "failed"),
    (137, "failed"),  # SIGKILL: nobody asked the run to stop (the OOM killer, say)
    (signal.SIGKILL, "failed"),
    (signal.SIGSEGV, "failed"),
]


@pytest.mark.parametrize(("how", "state"), TABLE, ids=repr)
def test_each_ending_has_one_state(how, state):
    assert ended_state(how) == state


def test_every_state_given_is_an_ended_one():
    assert {ended_state(how) for how, _ in TABLE} == set(ENDED_STATES)
