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
# A run never resumed had one session, begun at its start: a status that ended with its
# session_start the start_time itself is held without it (what reads it, the key of the
# alert of its end, falls back to start_time: visualizer/alerts/rules.py). Five fields fit a
# dict half the size of six: 100,000 finished runs, 9 MB.
SESSION, START = "session_start", "start_time"


Numbers = dict[type, dict[Any, Any]]  # a run's numbers by kind, each value's first object


def _shared(
    values: dict[Any, Any], numbers: Numbers, leave: frozenset[str] = frozenset()
) -> dict[Any, Any]:
    return {
        _one(key, numbers): _one(value, numbers)
        for key, value in values.items()
        if key not in leave
    }


def _one(value: Any, numbers: Numbers) -> Any:
    """``value``'s shared object: a string interned; an int or float the run's first object of
    its value and kind (a zero as it is: 0.0 and -0.0 are equal, not the same)."""
    kind = type(value)
    if kind is str:
        return intern(value)
    if kind is int or (kind is float and value):
        return numbers[kind].setdefault(value, value)
    return value


def share_strings(summary: RunSummary) -> None:
    """Give ``summary``'s dicts the strings every run shares (``sys.intern``): unpickled,
    each run's status, config and series named them in strings of its own, a kilobyte a run
    (100 MB of 100,000 runs held for the runs table), and held the same values (a state, a
    host, an optimizer's name) each in its own string (15 MB); 4 us a run. Equal numbers of
    a run are one object too: its series' counts, steps and times, its status' times (a
    finished run's last log time is its update time and each series' time: 100,000 runs,
    27 MB). A run that ended keeps no :data:`LIVE_ONLY` field, nor a :data:`SESSION` that is
    its start."""
    numbers: Numbers = {int: {}, float: {}}
    summary.state = _one(summary.state, numbers)
    summary.step = _one(summary.step, numbers)
    summary.started = _one(summary.started, numbers)
    summary.updated = _one(summary.updated, numbers)
    for stats in summary.series.values():
        stats.count, stats.step = _one(stats.count, numbers), _one(stats.step, numbers)
        stats.time = _one(stats.time, numbers)
    summary.series = _shared(summary.series, numbers)
    summary.config = _shared(summary.config, numbers)
    status = summary.status
    if status is not None:
        leave = LIVE_ONLY if summary.ended else frozenset()
        session, start = (_one(status.get(key), numbers) for key in (SESSION, START))
        if summary.ended and session is start and start is not None:  # same kind and value
            leave |= {SESSION}
        summary.status = _shared(status, numbers, leave)
