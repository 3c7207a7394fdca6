"""The curve rules in the viewer: each watched run's new points and status, fed to its judge.

A run's points are fed once, as they arrive (a series whose points were merged
anew is fed again from its start); a run that has ended is judged one last time
and then forgotten: 10,000 finished runs cost nothing on a pass. The judging
itself is :mod:`snapshot_store.alert_rules.judge`'s, the one the writer runs too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from run_core.tags import key_of
from snapshot_store.alert_rules.curves import step_rates
from snapshot_store.alert_rules.judge import Finding, RunJudge
from snapshot_store.alert_rules.language import STEP_RATE, CurveRule
from snapshot_store.format.frames import ENDED_STATES
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.series import Series

# The baseline run's data (read whole), when a baseline is chosen and read.
BaselineRun = Callable[[], RunData | None]


def _none() -> RunData | None:
    return None


def rate_source(run: RunData) -> tuple[SeriesKey, bool] | None:
    """Where ``slower``'s :data:`STEP_RATE` comes from: (a series, whether it is the rate
    itself). A series logged as ``steps/s`` is; else the run's steps per second are taken
    from its most logged series' steps and wall times."""
    if key_of(STEP_RATE) in run.series:
        return key_of(STEP_RATE), True
    sizes = [(len(series), key) for key, series in sorted(run.series.items())]
    return (max(sizes)[1], False) if sizes else None


def _rate_points(series: Series, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The steps per second a series' points from ``start`` on tell (from the one before)."""
    begin = max(start - 1, 0)
    return step_rates(series.steps(begin), series.times(slice(begin, None)))


class CurveWatch:
    """The judges of the runs watched, and how far each series was fed."""

    def __init__(self, rules: Sequence[CurveRule], baseline: BaselineRun | None = None) -> None:
        self.rules = list(rules)
        self.baseline = baseline or _none
        self._judges: dict[str, RunJudge] = {}
        self._fed: dict[tuple[str, str], tuple[int, int]] = {}  # (run, tag) -> (points, rewinds)
        self._ended: set[str] = set()
        self._rate_sources: dict[str, tuple[SeriesKey, bool] | None] = {}

    def _series_of_baseline(self, tag: str) -> tuple[np.ndarray, np.ndarray] | None:
        run = self.baseline()
        if run is not None and tag == STEP_RATE:
            source = rate_source(run)
            if source is not None and not source[1]:
                logged = run.series[source[0]]
                return step_rates(logged.steps(), logged.times(slice(None)))[:2]
        series = run.series.get(key_of(tag)) if run is not None else None
        return None if series is None or not len(series) else (series.steps(), series.values())

    def findings(self, run: RunData, now: float) -> list[Finding]:
        """What the rules find in ``run``'s points and status since the last look."""
        if not self.rules or run.name in self._ended:
            return []
        judge = self._judges.get(run.name)
        if judge is None:
            judge = self._judges[run.name] = RunJudge(self.rules, self._series_of_baseline)
        found = []
        for tag in sorted(judge.tags):
            rate = None
            if tag == STEP_RATE:  # its source kept: the most logged series may change
                rate = self._rate_sources.get(run.name) or rate_source(run)
                self._rate_sources[run.name] = rate
            series = run.series.get(rate[0] if rate else key_of(tag))
            if series is None:
                continue
            fed, rewinds = self._fed.get((run.name, tag), (0, series.rewinds))
            if rewinds != series.rewinds:  # points merged in: judged again from the start
                judge.restart(tag)
                fed = 0
            self._fed[(run.name, tag)] = (len(series), series.rewinds)
            if fed >= len(series):
                continue
            if rate is not None and not rate[1]:  # the run's own steps per second
                found += judge.points(tag, *_rate_points(series, fed))
            else:
                times = series.times(slice(fed, None))
                found += judge.points(tag, series.steps(fed), series.values(fed), times)
        status = run.status or {}
        found += judge.status(status, now)
        if status.get("state") in ENDED_STATES:  # judged whole: never again
            self._ended.add(run.name)
            del self._judges[run.name]
            self._rate_sources.pop(run.name, None)
            for tag in judge.tags | {r.tag for r in self.rules if r.tag}:
                self._fed.pop((run.name, tag), None)
        return found
