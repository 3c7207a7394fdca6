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
from snapshot_store.alert_rules.judge import Finding, RunJudge
from snapshot_store.alert_rules.language import CurveRule
from snapshot_store.format.frames import ENDED_STATES
from visualizer.model.rundata import RunData

# The baseline run's data (read whole), when a baseline is chosen and read.
BaselineRun = Callable[[], RunData | None]


def _none() -> RunData | None:
    return None


class CurveWatch:
    """The judges of the runs watched, and how far each series was fed."""

    def __init__(self, rules: Sequence[CurveRule], baseline: BaselineRun | None = None) -> None:
        self.rules = list(rules)
        self.baseline = baseline or _none
        self._judges: dict[str, RunJudge] = {}
        self._fed: dict[tuple[str, str], tuple[int, int]] = {}  # (run, tag) -> (points, rewinds)
        self._ended: set[str] = set()

    def _series_of_baseline(self, tag: str) -> tuple[np.ndarray, np.ndarray] | None:
        run = self.baseline()
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
            series = run.series.get(key_of(tag))
            if series is None:
                continue
            fed, rewinds = self._fed.get((run.name, tag), (0, series.rewinds))
            if rewinds != series.rewinds:  # points merged in: judged again from the start
                judge.restart(tag)
                fed = 0
            self._fed[(run.name, tag)] = (len(series), series.rewinds)
            if fed < len(series):
                times = series.times(slice(fed, None))
                found += judge.points(tag, series.steps(fed), series.values(fed), times)
        status = run.status or {}
        found += judge.status(status, now)
        if status.get("state") in ENDED_STATES:  # judged whole: never again
            self._ended.add(run.name)
            del self._judges[run.name]
            for tag in judge.tags | {r.tag for r in self.rules if r.tag}:
                self._fed.pop((run.name, tag), None)
        return found
