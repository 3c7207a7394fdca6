"""What the runs table knows of a run without its series: its summary (W&B's ``summary``).

The writer keeps one in ``status.pickle`` (docs/store-format.md): per series the
last value and step, min, max and count, and the run's hparams; ``meta.pickle``
holds its options. A store written before that is read whole once and its
summary computed from the series (:func:`from_run`). The summary's schema is the
store format's (:mod:`snapshot_store.format.summary`). Everything here is data
from a file that may be hostile: each field is checked, a bad one is left out.
"""

from __future__ import annotations

import json
import math
from typing import Any

from run_core.tags import higher_is_better as higher_is_better  # the runs table reads it here
from run_core.tags import tag_of
from snapshot_store.format.frames import RUN_FIELDS
from snapshot_store.format.summary import RunSummary, SeriesStats

from .rundata import RunData
from .status import is_stale

# Status fields taken apart into the summary (and meta's, repeated there: name, config).
_SUMMARIZED = frozenset(("series", "hparams", "summary", *RUN_FIELDS))
# A tuple, not ``int | float``: that union is built again on every call, and listing
# 10,000 runs checks 120,000 values.
_NUMBERS = (int, float)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


# The times a date shows (Unix seconds from 1970 to the end of 9999, a day inside for the
# local zone): a status' start or update time out of them is left out, as any field not of
# its kind (datetime, and so the runs table's dates, can not take year 10000).
_TIMES = (0.0, 253402300800.0 - 86400)


def _time(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and _TIMES[0] <= number <= _TIMES[1] else None


def _step(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dotted(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """``value`` into ``out`` as table columns: a dict's keys dotted under ``prefix``, a list
    (or an empty dict) as its JSON, anything else as it is."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            dotted(f"{prefix}.{key}", item, out)
    elif isinstance(value, list | tuple | dict):
        try:
            out[prefix] = json.dumps(value, default=str)
        except (TypeError, ValueError):  # a key JSON has no form for (bytes, a tuple)
            out[prefix] = repr(value)
    else:
        out[prefix] = value


def state_shown(summary: RunSummary, now: float) -> str:
    """The state as shown: a running run whose heartbeat stopped is ``running (stale)``,
    an unreadable store ``unreadable: <why>``."""
    if summary.error is not None:
        return f"{summary.state}: {summary.error}"
    if summary.status is not None and is_stale(summary.status, now):
        return f"{summary.state} (stale)"
    return summary.state


def _config(meta: dict[str, Any] | None, status: dict[str, Any] | None) -> dict[str, Any]:
    """Options (meta) and hparams (status), by name; hparams win where both name a key, but
    for an option that is a list or dict (an hparam holds only its text: ``'[640, 640]'``)."""
    options, hparams = (meta or {}).get("options"), (status or {}).get("hparams")
    config: dict[str, Any] = {}
    if isinstance(options, dict):
        config.update((str(k), v) for k, v in options.items())
    if isinstance(hparams, dict):
        structured = {k for k, v in config.items() if isinstance(v, (list, dict))}
        config.update((str(k), v) for k, v in hparams.items() if str(k) not in structured)
    return config


def best_is_highest(tag: str, descending: bool = False) -> bool:
    """Whether series ``tag``'s best value is its largest: an accuracy, F1, AUC... by its logged
    name, or any series the page orders descending; else (a loss) its smallest. The one rule
    for "best": the runs table, the runs compared, the comparison's table and its parallel
    coordinates all judge by it."""
    return descending or higher_is_better(tag)


def best_of(
    tag: str, lowest: float | None, highest: float | None, descending: bool = False
) -> float | None:
    """Series ``tag``'s best value of its ``lowest`` and ``highest`` (:func:`best_is_highest`)."""
    return highest if best_is_highest(tag, descending) else lowest


def run_best(run: RunData, key: tuple[str, str] | None, descending: bool = False) -> float | None:
    """The best value of ``run``'s series ``key`` (NaN left out); None when it has none."""
    series = run.series.get(key) if key is not None else None
    if key is None or series is None or not len(series):
        return None
    values = series.values()
    finite = values[~(values != values)]  # NaN never is the best
    if not len(finite):
        return None
    return best_of(tag_of(*key), float(finite.min()), float(finite.max()), descending)


def run_config(run: RunData) -> dict[str, Any]:
    """A run's config: its stored options and hparams, by name."""
    return _config(run.meta, run.status)


def from_documents(
    name: str, meta: dict[str, Any] | None, status: dict[str, Any] | None
) -> RunSummary:
    """The summary ``meta`` and ``status`` hold; ``summarized`` False when status has none."""
    status = status if isinstance(status, dict) else None
    meta = meta if isinstance(meta, dict) else None
    # The document is kept for what reads it whole (staleness, alerts), less what is
    # summarized here: 10,000 runs' series would otherwise be held twice.
    kept = {k: v for k, v in status.items() if k not in _SUMMARIZED} if status else None
    summary = RunSummary(name, config=_config(meta, status), status=kept)
    values = (status or {}).get("summary")
    if isinstance(values, dict):
        summary.values = {str(k): v for k, v in values.items()}
    summary.started = _time((status or {}).get("start_time")) or _time(
        (meta or {}).get("start_time")
    )
    if status is None:
        return summary
    state = status.get("state")
    summary.state = state if isinstance(state, str) and state.isprintable() else "unknown"
    summary.step = _step(status.get("step"))
    summary.updated = _time(status.get("last_log_time")) or _time(status.get("updated"))
    series = status.get("series")
    if isinstance(series, dict):
        summary.summarized = True
        for tag, entry in series.items():
            stats = SeriesStats.read(entry)
            if isinstance(tag, str) and stats is not None:
                summary.series[tag] = stats
    return summary


def from_run(run: RunData) -> RunSummary:
    """The summary of a run read whole (a store without one, or a run followed live)."""
    summary = from_documents(run.name, run.meta, run.status)
    for (group, name), series in run.series.items():
        n = len(series)
        if not n:
            continue
        values = series.values()
        finite = values[~(values != values)]  # NaN never is the min or max
        summary.series[tag_of(group, name)] = SeriesStats(
            n,
            series.last_step,
            float(values[-1]),
            float(finite.min()) if len(finite) else None,
            float(finite.max()) if len(finite) else None,
        )
        last = _time(series.last_time)
        if last is not None and (summary.updated is None or last > summary.updated):
            summary.updated = last
    summary.summarized = True
    return summary
