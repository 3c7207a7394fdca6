"""The run summary: what ``status.pickle`` says of a run at a glance (W&B's ``summary``).

The one schema of it, for the writer that fills it (:mod:`snapshot_store.write.summary`)
and for every reader: the viewer's runs table, the Api and the export
(``visualizer.model.summary`` reads a status into a :class:`RunSummary`). Its
fields in the status document (docs/store-format.md)::

    "series": {tag: {"count", "step", "last", "min", "max", "time"}, ...}
    "series_left_out": n    # only past MAX_SUMMARY_SERIES series
    "hparams": {...}        # the last add_hparams dict, absent if none

A reader takes these from a file that may be hostile: :meth:`SeriesStats.read`
keeps what is well-typed and drops the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from snapshot_store.format.frames import ENDED_STATES

# Series the status names; the rest are counted in "series_left_out". A status is
# rewritten every second: 1,000 entries keep it near 100 kB.
MAX_SUMMARY_SERIES = 1000
# The status fields of the summary, beside the run's state and heartbeat.
SUMMARY_FIELDS = ("series", "series_left_out", "hparams")
# The state of a run whose store has no status document yet.
NO_STATUS = "no status yet"
# A tuple, not ``int | float``: that union is built again on every call, and listing
# 10,000 runs checks 120,000 values.
_NUMBERS = (int, float)


@dataclass(slots=True)
class SeriesStats:
    """One series at a glance: how many points, the last one (step, value, wall time) and
    its extremes (None while every value was NaN); :meth:`fields` is its status entry."""

    count: int = 0
    step: int | None = None
    last: float | None = None
    min: float | None = None
    max: float | None = None
    time: float | None = None

    def best(self, higher_is_better: bool) -> float | None:
        """The best value: the largest when higher is better, else the smallest."""
        return self.max if higher_is_better else self.min

    def fields(self) -> dict[str, Any]:
        """The entry the status document holds for this series."""
        return {
            "count": self.count,
            "step": self.step,
            "last": self.last,
            "min": self.min,
            "max": self.max,
            "time": self.time,
        }

    @classmethod
    def read(cls, entry: Any) -> SeriesStats | None:
        """The stats a status entry holds, each field left None when it is not of its type
        (NaN and infinities are values: a diverged loss); None when the entry has no count."""
        if not isinstance(entry, dict):
            return None
        count = _int(entry.get("count"))
        if count is None or count < 0:
            return None
        get = entry.get
        return cls(
            count,
            _int(get("step")),
            _float(get("last")),
            _float(get("min")),
            _float(get("max")),
            _float(get("time")),
        )


def _int(value: Any) -> int | None:
    if type(value) is int:  # the common case first: 100,000 runs hold 1.8 million numbers
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return None
    return float(value)


@dataclass(slots=True)  # a viewer of 100,000 runs holds one a run
class RunSummary:
    """A run as a runs table shows it; ``summarized`` is False for a store without one."""

    name: str
    state: str = NO_STATUS
    step: int | None = None
    started: float | None = None
    updated: float | None = None
    series: dict[str, SeriesStats] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    # The summary a run set as the structures logged (W&B's ``run.summary``: text, dicts...).
    values: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] | None = None  # the document itself: staleness, alerts
    summarized: bool = False
    error: str | None = None  # why an unreadable store could not be read

    @property
    def ended(self) -> bool:
        """Whether the run says it ended (finished, failed or stopped)."""
        return self.state in ENDED_STATES

    @property
    def duration(self) -> float | None:
        """Seconds from its start to its last update."""
        if self.started is None or self.updated is None:
            return None
        return max(0.0, self.updated - self.started)
