"""The judges of a curve, fed a series' points as they arrive and keeping only what they need.

Each judge works on "lower is better" values (a series where higher is better is
negated, by its name: :func:`run_core.tags.higher_is_better`), and on the curve
smoothed by a rolling median where noise would fool it (a median, not a mean: one
spike does not move it). A judge answers the point at which its kind held, once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .language import CurveRule

_CHUNK = 65_536  # windows taken at once: a million points' medians within a few MB
MAD_SD = 1.4826  # a normal distribution's standard deviation per median absolute deviation

# A baseline run's series: (steps, values), its points in step order.
Baseline = Callable[[str], tuple[np.ndarray, np.ndarray] | None]


@dataclass(frozen=True)
class Held:
    """Where a rule held: the point's step, the values it is told with, in words."""

    step: int
    words: str


def step_rates(steps: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps per second between consecutive points, at the later one: ``(steps, rates,
    times)``, one fewer than given, less the pairs without a wall time or without a step
    forward in time (a rewritten step, a clock set back)."""
    steps, times = np.asarray(steps, dtype=np.float64), np.asarray(times, dtype=np.float64)
    d_steps, d_times = np.diff(steps), np.diff(times)
    ok = np.isfinite(d_times) & (d_times > 0) & (d_steps > 0)
    return steps[1:][ok].astype(np.int64), d_steps[ok] / d_times[ok], times[1:][ok]


def rolling_median(values: np.ndarray, width: int) -> np.ndarray:
    """The median of each ``width`` consecutive values (``len - width + 1`` of them)."""
    if len(values) < width:
        return np.empty(0)
    windows = sliding_window_view(values, width)
    return np.concatenate(
        [np.median(windows[i : i + _CHUNK], axis=1) for i in range(0, len(windows), _CHUNK)]
    )


def run_lengths(flags: np.ndarray, carried: int) -> np.ndarray:
    """How many consecutive True end at each flag, the run before the batch being ``carried``."""
    index = np.arange(len(flags))
    last_false = np.maximum.accumulate(np.where(flags, -1, index)) if len(flags) else index
    return np.where(last_false < 0, index + 1 + carried, index - last_false)


class RollingMedian:
    """The rolling median of a series' last ``width`` values, given each new point's."""

    def __init__(self, width: int) -> None:
        self.width = max(1, width)
        self._tail = np.empty(0)
        self._tail_steps = np.empty(0, dtype=np.int64)

    def feed(self, steps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The new points that have ``width`` values behind them: (steps, smoothed values)."""
        x = np.concatenate([self._tail, values])
        s = np.concatenate([self._tail_steps, steps])
        keep = self.width - 1  # the values the next point's window reaches back to
        self._tail, self._tail_steps = x[max(0, len(x) - keep) :], s[max(0, len(s) - keep) :]
        smoothed = rolling_median(x, self.width)
        return s[len(s) - len(smoothed) :], smoothed


class Diverging:
    """The smoothed curve stays worse than its best by ``margin`` (relative) for ``points``
    points; the best is taken after the first ``points`` (a warm-up's rise is no news)."""

    def __init__(self, rule: CurveRule, sign: float) -> None:
        self.sign = sign
        self.margin, self.points = rule.param("margin"), int(rule.param("points"))
        self.smoother = RollingMedian(int(rule.param("smooth")))
        self.seen, self.best, self.run = 0, math.inf, 0

    def feed(self, steps: np.ndarray, y: np.ndarray, _times: np.ndarray) -> Held | None:
        steps, s = self.smoother.feed(steps, y)
        skip = max(0, min(len(s), self.points - self.seen))
        self.seen += len(s)
        steps, s = steps[skip:], s[skip:]
        if not len(s):
            return None
        best = np.minimum.accumulate(np.concatenate([[self.best], s]))[1:]
        self.best = float(best[-1])
        lengths = run_lengths(s > best + self.margin * np.abs(best), self.run)
        self.run = int(lengths[-1])
        hit = np.flatnonzero(lengths >= self.points)
        if not len(hit):
            return None
        i = int(hit[0])
        value, was = self.sign * s[i], self.sign * best[i]
        return Held(
            int(steps[i]),
            f"{value:.4g} (smoothed), {_pct(s[i], best[i])} worse than its best {was:.4g} "
            f"for {self.points} points",
        )


class Plateau:
    """No new best of the smoothed curve (better by ``delta``, relative) for ``share`` of the
    points so far, at least ``points``; or for ``steps`` steps, or ``minutes``, when given."""

    def __init__(self, rule: CurveRule, sign: float) -> None:
        self.sign = sign
        self.delta, self.share = rule.param("delta"), rule.param("share")
        self.points = int(rule.param("points"))
        self.steps, self.minutes = rule.param("steps"), rule.param("minutes")
        if rule.gave("points") or self.steps or self.minutes:
            self.share = 0.0  # a window the rule names is the window
        self.smoother = RollingMedian(int(rule.param("smooth")))
        self.count, self.best, self.best_at = 0, math.inf, (0, 0, math.nan)  # index, step, time

    def feed(self, steps: np.ndarray, y: np.ndarray, times: np.ndarray) -> Held | None:
        steps, s = self.smoother.feed(steps, y)
        times = times[len(times) - len(s) :]
        i = 0
        while i < len(s):
            bar = self.best - self.delta * abs(self.best) if math.isfinite(self.best) else math.inf
            below = np.flatnonzero(s[i : i + _CHUNK] < bar)
            end = len(s[i : i + _CHUNK])
            j = i + int(below[0]) if len(below) else i + end
            held = self._gap(steps, times, i, j)
            if held is not None:
                return held
            if len(below):
                self.best, self.best_at = (
                    float(s[j]),
                    (self.count + j, int(steps[j]), float(times[j])),
                )
                j += 1
            i = j
        self.count += len(s)
        return None

    def _gap(self, steps: np.ndarray, times: np.ndarray, i: int, j: int) -> Held | None:
        """The first of points i..j-1 (none a new best) at which the plateau is long enough."""
        if j <= i or not math.isfinite(self.best):
            return None
        index, step, time = self.best_at
        at = np.arange(self.count + i, self.count + j)
        if self.minutes:
            long = times[i:j] - time >= self.minutes * 60
        elif self.steps:
            long = steps[i:j] - step >= self.steps
        else:
            long = (at - index >= self.points) & (at - index >= self.share * at)
        hit = np.flatnonzero(long)
        if not len(hit):
            return None
        k = i + int(hit[0])
        best = self.sign * self.best
        words = f"no new best since step {step} ({best:.4g} smoothed), {int(steps[k]) - step} steps"
        return Held(int(steps[k]), words)


class Spike:
    """A value ``k`` robust standard deviations (median/MAD) worse than the ``window`` before it."""

    def __init__(self, rule: CurveRule, sign: float) -> None:
        self.sign = sign
        self.k, self.window = rule.param("k"), max(3, int(rule.param("window")))
        self._tail = np.empty(0)

    def feed(self, steps: np.ndarray, y: np.ndarray, _times: np.ndarray) -> Held | None:
        x = np.concatenate([self._tail, y])
        self._tail = x[-self.window :]
        before = sliding_window_view(x[:-1], self.window) if len(x) > self.window else None
        if before is None:
            return None
        new = x[self.window :]
        for i in range(0, len(new), _CHUNK):
            windows = before[i : i + _CHUNK]
            median = np.median(windows, axis=1)
            sd = MAD_SD * np.median(np.abs(windows - median[:, None]), axis=1)
            # a flat series' MAD is 0: a change of a thousandth of its level is not a spike
            scale = np.maximum(sd, 1e-3 * np.abs(median) + 1e-12)
            hit = np.flatnonzero((new[i : i + _CHUNK] - median) > self.k * scale)
            if len(hit):
                j = int(hit[0])
                z = (new[i + j] - median[j]) / scale[j]
                step = int(steps[len(steps) - len(new) + i + j])
                value = self.sign * new[i + j]
                words = (
                    f"{value:.4g}, {z:.0f} robust standard deviations from the {self.window} before"
                )
                return Held(step, words)
        return None


class AgainstBaseline:
    """Worse than the baseline run's smoothed curve at the same steps, for ``points`` points:
    by ``pct`` % (``slower``: a rate), or by ``margin`` (``worse``: a metric; ``pct`` % of
    the baseline's value when no margin is given)."""

    def __init__(self, rule: CurveRule, baseline: Baseline, sign: float) -> None:
        self.rule, self.baseline, self.sign = rule, baseline, sign
        self.points, self.pct = int(rule.param("points")), rule.param("pct") / 100
        self.margin = rule.param("margin") if rule.kind == "worse" else 0.0
        self.smoother = RollingMedian(int(rule.param("smooth")))
        self.run = 0
        self._smoothed: tuple[int, np.ndarray, np.ndarray] | None = None  # (points, steps, values)

    def _reference(self) -> tuple[np.ndarray, np.ndarray] | None:
        found = self.baseline(self.rule.tag or "")
        if found is None or len(found[0]) < self.smoother.width:
            return None
        steps, values = found
        if self._smoothed is None or self._smoothed[0] != len(steps):
            width = self.smoother.width
            finite = np.isfinite(values)
            steps, values = steps[finite], values[finite]
            self._smoothed = (len(found[0]), steps[width - 1 :], rolling_median(values, width))
        return self._smoothed[1], self._smoothed[2]

    def feed(self, steps: np.ndarray, y: np.ndarray, _times: np.ndarray) -> Held | None:
        steps, s = self.smoother.feed(steps, y)
        reference = self._reference()
        if reference is None or not len(s):
            return None
        ref_steps, ref = reference
        inside = (steps >= ref_steps[0]) & (steps <= ref_steps[-1])
        steps, s = steps[inside], s[inside]
        b = self.sign * np.interp(steps, ref_steps, ref)  # lower is better, as s
        allowed = self.margin if self.margin else self.pct * np.abs(b)
        lengths = run_lengths(s - b > allowed, self.run)
        self.run = int(lengths[-1]) if len(lengths) else self.run
        hit = np.flatnonzero(lengths >= self.points)
        if not len(hit):
            return None
        i = int(hit[0])
        ours, theirs = self.sign * s[i], self.sign * b[i]
        words = f"{ours:.4g} against the baseline's {theirs:.4g} ({_pct(s[i], b[i])} worse)"
        return Held(int(steps[i]), f"{words} for {self.points} points")


def _pct(value: float, best: float) -> str:
    """How much worse ``value`` is than ``best`` (lower is better), in percent of ``best``."""
    if best == 0:
        return f"{value - best:+g}"
    return f"{(value - best) / abs(best):.0%}"
