"""The ``--alert-rule`` language: a threshold on a series' last value, or a kind of curve.

    val/loss>2.5                  a threshold (> >= < <= == !=) on the last value
    diverging:train/loss          KIND:SERIES[:key=value,...]
    plateau:val/loss:points=500
    spike:train/loss:k=6
    stall:minutes=10              no series: the run's step, beside its heartbeat
    slower:samples_per_s:pct=20   against the baseline run
    slower:pct=20                 no series: the run's steps per second (STEP_RATE)
    worse:val/acc:margin=0.02     against the baseline run

Every parameter has a default (:data:`KINDS`) that works without tuning; a
rule's text names only what it changes.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from run_core.tags import key_of

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_THRESHOLD = re.compile(r"^(?P<series>[^<>=!]*?)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>.*)$")
_EXAMPLE = "e.g. 'val/loss>2.5' or 'diverging:train/loss'"

# Each kind's parameters and their defaults. Windows count logged points (not steps), so a
# default fits a run that logs every step as well as one that logs every hundredth.
KINDS: dict[str, dict[str, float]] = {
    # the smoothed curve worse than its best by ``margin`` (relative) for ``points`` points
    "diverging": {"margin": 0.2, "points": 100, "smooth": 21},
    # no new best (by ``delta``, relative) for ``share`` of the points so far (at least
    # ``points``); or, when given, for ``steps`` steps or ``minutes`` minutes
    "plateau": {"points": 200, "share": 0.3, "delta": 0.01, "steps": 0, "minutes": 0, "smooth": 51},
    # a value ``k`` robust standard deviations (median/MAD) worse than the ``window`` before it
    "spike": {"k": 10, "window": 50},
    # running, the heartbeat fresh, the step unmoved for ``minutes``
    "stall": {"minutes": 10},
    # a rate ``pct`` % below the baseline run's at the same steps, for ``points`` points
    "slower": {"pct": 20, "points": 50, "smooth": 21},
    # a metric worse than the baseline's at the same step by ``margin`` (absolute), or
    # by ``pct`` % of the baseline's value when no margin is given, for ``points`` points
    "worse": {"pct": 5, "margin": 0, "points": 50, "smooth": 21},
}
SERIESLESS = ("stall",)  # kinds that judge the run, not a series
BASELINE_KINDS = ("slower", "worse")
# ``slower`` with no series judges this one: a series logged so, else the run's own steps
# per second (its most logged series' steps over their wall times: every run has that).
STEP_RATE = "steps/s"


@dataclass(frozen=True)
class Threshold:
    """``NAME OP NUMBER`` (the series' name as logged): holds when its last value compares so."""

    tag: str
    op: str
    threshold: float

    kind = "rule"  # the alert's event, as it always was

    @property
    def key(self) -> tuple[str, str]:
        """The series' store key."""
        return key_of(self.tag)

    def __str__(self) -> str:
        return f"{self.tag}{self.op}{self.threshold:g}"

    def holds(self, value: float) -> bool:
        """Whether ``value`` (a finite last value) meets the rule."""
        return _OPS[self.op](value, self.threshold)


@dataclass(frozen=True)
class CurveRule:
    """A kind of curve (:data:`KINDS`) on a series (None for a run's stall), with the
    parameters its text changed."""

    kind: str
    tag: str | None
    given: tuple[tuple[str, float], ...] = ()

    def __str__(self) -> str:
        params = ",".join(f"{name}={value:g}" for name, value in self.given)
        return ":".join(part for part in (self.kind, self.tag, params) if part)

    def param(self, name: str) -> float:
        """The parameter's value: as given, else the kind's default."""
        return dict(self.given).get(name, KINDS[self.kind][name])

    def gave(self, name: str) -> bool:
        """Whether the rule's text set ``name``."""
        return name in dict(self.given)


Rule = Threshold | CurveRule


def parse_rule(text: str) -> Rule:
    """``text`` as a rule; ValueError in one line saying what is wrong and what is expected."""
    head = text.strip().split(":", 1)[0].strip().lower()
    if head in KINDS:
        return _parse_curve(text, head)
    match = _THRESHOLD.match(text.strip())
    if match is None or not match["series"].strip():
        kinds = ", ".join(KINDS)
        raise ValueError(
            f"{text!r} is not a rule: a series' name as logged, then one of {' '.join(_OPS)}, "
            f"then a number, or KIND:SERIES[:key=value,...] with a kind of {kinds} ({_EXAMPLE})"
        )
    try:
        threshold = float(match["value"])
    except ValueError:
        threshold = math.nan
    if not math.isfinite(threshold):
        raise ValueError(f"{text!r}: {match['value']!r} is not a finite number ({_EXAMPLE})")
    return Threshold(match["series"].strip(), match["op"], threshold)


def _parse_curve(text: str, kind: str) -> CurveRule:
    parts = [part.strip() for part in text.strip().split(":")][1:]
    tag = None if kind in SERIESLESS or not parts or "=" in parts[0] else parts.pop(0)
    if kind == "slower" and not tag:
        tag = STEP_RATE
    example = _example(kind)
    if kind not in SERIESLESS and not tag:
        raise ValueError(f"{text!r}: {kind} needs a series' name as logged ({example})")
    if len(parts) > 1:
        raise ValueError(f"{text!r}: too many ':' parts; write {example}")
    given: dict[str, float] = {}
    for item in filter(None, (parts[0] if parts else "").split(",")):
        name, sep, value = (piece.strip() for piece in item.partition("="))
        if not sep or name not in KINDS[kind]:
            known = ", ".join(KINDS[kind])
            raise ValueError(
                f"{text!r}: {item!r} is not one of {kind}'s key=value ({known}; {example})"
            )
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0 <= number < math.inf:
            raise ValueError(f"{text!r}: {name}={value!r} is not a number, 0 or more ({example})")
        given[name] = number
    return CurveRule(kind, tag, tuple(sorted(given.items())))


def _example(kind: str) -> str:
    name, value = next(iter(KINDS[kind].items()))
    series = "" if kind in SERIESLESS else ":val/loss"
    return f"e.g. '{kind}{series}:{name}={value:g}'"
