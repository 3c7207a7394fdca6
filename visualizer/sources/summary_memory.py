"""What the catalog holds of many runs: their summaries' key strings shared, and the runs
read held out of the cycle collector's passes."""

from __future__ import annotations

import gc
from sys import intern
from typing import Any

from visualizer.model.summary import RunSummary

HELD_FROM = 1_000  # runs from which the newly named ones are held out of the cycle collector


def hold() -> None:
    """Leave every object made so far out of the cycle collector's passes (``gc.freeze``),
    the garbage collected first. 100,000 runs' summaries are some 5 million objects in
    no cycle: each full pass over them took a second of the loop, idle too, and the one at
    exit two of the viewer's SIGTERM -> exit (0.3 s with them held). The pass before is a
    full one, so no cycle of garbage is frozen for good (a viewer calls this again as new
    runs come, for hours); it walks only what was made since the last freeze."""
    gc.collect()
    gc.freeze()


# Status fields read of a running run (its heartbeat: staleness, silence) or by a followed run's
# status panel, from the status it reads itself: a run that ended is held without them
# (100,000 finished runs: 36 MB). Its state, times, alerts and checkpoints stay.
LIVE_ONLY = frozenset(
    ("host", "pid", "epoch", "total_steps", "unwritten_records", "heartbeat_seconds")
)


def _shared(values: dict[Any, Any], leave: frozenset[str] = frozenset()) -> dict[Any, Any]:
    return {_one(key): _one(value) for key, value in values.items() if key not in leave}


def _one(value: Any) -> Any:
    return intern(value) if type(value) is str else value


def share_strings(summary: RunSummary) -> None:
    """Give ``summary``'s dicts the strings every run shares (``sys.intern``): unpickled,
    each run's status, config and series named them in strings of its own, a kilobyte a run
    (100 MB of 100,000 runs held for the runs table), and held the same values (a state, a
    host, an optimizer's name) each in its own string (15 MB); 4 us a run. A run that ended
    keeps no :data:`LIVE_ONLY` field."""
    summary.state = _one(summary.state)
    summary.series, summary.config = _shared(summary.series), _shared(summary.config)
    if summary.status is not None:
        summary.status = _shared(summary.status, LIVE_ONLY if summary.ended else frozenset())
