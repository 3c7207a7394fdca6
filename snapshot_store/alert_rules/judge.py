"""One run's curve rules, judged from its points and status as they arrive: the one evaluator.

The caller (the viewer's alert watch, or a run's writer thread) feeds each series'
new points once (:meth:`RunJudge.points`) and the run's status
(:meth:`RunJudge.status`); a finding comes back once per rule, and the rule is then
done with that run. A judge keeps a window of each series, never its history.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from run_core.tags import higher_is_better

from .curves import AgainstBaseline, Baseline, Diverging, Held, Plateau, Spike
from .language import BASELINE_KINDS, CurveRule

# How each kind reads in an alert: "run 'a' has train/loss diverging at step 900: ..."
_SAID = {
    "diverging": "diverging",
    "plateau": "on a plateau",
    "spike": "spiking",
    "slower": "slower than the baseline",
    "worse": "worse than the baseline",
}
STALE_HEARTBEATS = 3  # a heartbeat older than this many beats (or 30 s) has stopped: silent's


@dataclass(frozen=True)
class Finding:
    """A rule that held for a run: the alert's event (the kind), its words, its key."""

    event: str
    detail: str
    key: str  # once per run: remembered as sent


class _Judge(Protocol):
    sign: float

    def feed(self, steps: np.ndarray, y: np.ndarray, times: np.ndarray) -> Held | None: ...


def _no_baseline(tag: str) -> tuple[np.ndarray, np.ndarray] | None:
    return None


def rule_key(rule: CurveRule) -> str:
    """The once-per-run key of ``rule``'s alert."""
    return str(rule)  # its kind first: never a threshold's "rule:..." key


class RunJudge:
    """The curve rules' state for one run."""

    def __init__(self, rules: Iterable[CurveRule], baseline: Baseline = _no_baseline) -> None:
        self.rules = list(rules)
        self.baseline = baseline
        self.done: set[CurveRule] = set()
        self._judges: dict[CurveRule, _Judge] = {}
        self._step: Any = None  # the status' step last seen, and since when it has not moved
        self._since = math.nan

    @property
    def tags(self) -> set[str]:
        """The series the rules not yet done read."""
        return {r.tag for r in self.rules if r.tag is not None and r not in self.done}

    def _judge(self, rule: CurveRule) -> _Judge:
        judge = self._judges.get(rule)
        if judge is not None:
            return judge
        # judges see lower as better: a rate (slower's) and an accuracy are negated
        sign = -1.0 if rule.kind == "slower" or higher_is_better(rule.tag or "") else 1.0
        made: _Judge
        if rule.kind in BASELINE_KINDS:
            made = AgainstBaseline(rule, self.baseline, sign)
        elif rule.kind == "diverging":
            made = Diverging(rule, sign)
        elif rule.kind == "plateau":
            made = Plateau(rule, sign)
        else:
            made = Spike(rule, sign)
        self._judges[rule] = made
        return made

    def restart(self, tag: str) -> None:
        """Forget what ``tag``'s points taught (its points changed: they are fed again)."""
        for rule in [r for r in self._judges if r.tag == tag]:
            del self._judges[rule]

    def points(
        self, tag: str, steps: np.ndarray, values: np.ndarray, times: np.ndarray | None = None
    ) -> list[Finding]:
        """Judge ``tag``'s new points (in step order; times: wall seconds, NaN unknown)."""
        values = np.asarray(values, dtype=np.float64)
        times = np.full(len(values), np.nan) if times is None else np.asarray(times, np.float64)
        finite = np.isfinite(values)  # a NaN is the non-finite alert's, not a curve's
        steps, values, times = np.asarray(steps)[finite], values[finite], times[finite]
        found = []
        for rule in self.rules:
            if rule.tag != tag or rule in self.done or not len(values):
                continue
            judge = self._judge(rule)
            held = judge.feed(steps, values * judge.sign, times)
            if held is not None:
                self.done.add(rule)
                detail = f"has {tag} {_SAID[rule.kind]} at step {held.step}: {held.words}"
                found.append(Finding(rule.kind, detail, rule_key(rule)))
        return found

    def status(self, status: Mapping[str, Any], now: float) -> list[Finding]:
        """Judge the run's status: a ``stall`` is a step that has not moved for the rule's
        minutes while the heartbeat goes on (a rank hung in a collective, a dead data loader)."""
        step, updated = status.get("step"), _number(status.get("updated"))
        if step != self._step:
            self._step = step
            logged = _number(status.get("last_log_time"))
            self._since = logged if logged is not None and logged <= now else now
        beat = _number(status.get("heartbeat_seconds")) or 5.0
        alive = updated is not None and now - updated <= max(STALE_HEARTBEATS * beat, 30.0)
        if status.get("state") != "running" or not alive or not isinstance(step, int):
            return []
        found = []
        for rule in self.rules:
            if rule.kind != "stall" or rule in self.done:
                continue
            if now - self._since >= rule.param("minutes") * 60:
                self.done.add(rule)
                still = f"{(now - self._since) / 60:.1f} min"
                detail = f"has not moved from step {step} for {still} while its heartbeat goes on"
                found.append(Finding("stall", detail, rule_key(rule)))
        return found


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
