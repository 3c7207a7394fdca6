"""TensorBoard's smoothing: a debiased exponential moving average over every stored point.

For weight ``w`` in [0, 1) and the finite values ``x_1, x_2, ...`` of a series,
TensorBoard keeps ``acc_i = w * acc_(i-1) + (1 - w) * x_i`` (``acc_0 = 0``) and
draws ``acc_i / (1 - w**i)``: dividing by ``1 - w**i`` removes the pull towards
the zero it starts from. Non-finite values are drawn as they are and leave the
average alone; a series whose values all equal its first is drawn unsmoothed
(so float rounding can not make a flat line wiggle).

The smoothed curve is computed here, in the visualizer, from every point the
store holds, before display decimation; :class:`Smoother` extends it as a
series grows instead of recomputing it.
"""

from __future__ import annotations

import math

import numpy as np

from .series import Column, Series

DEFAULT_SMOOTHING = 0.6  # TensorBoard's default weight
# Points smoothed per numpy pass: bounds the temporary arrays of a long replay.
_CHUNK = 1 << 18
# Within a block, values are scaled by up to w**-B; keeping that below 1e50 keeps
# any loss below ~1e250 far from float64 overflow.
_MAX_SCALE_DECADES = 50.0
_MAX_BLOCK = 4096


def check_smoothing(weight: float) -> float:
    """``weight`` if it is a smoothing weight TensorBoard accepts, in [0, 1); ValueError otherwise."""
    if not (math.isfinite(weight) and 0.0 <= weight < 1.0):
        raise ValueError(f"smoothing (--smoothing) must be at least 0 and below 1, not {weight}")
    return weight


def _block_size(weight: float) -> int:
    if weight <= 0.0:
        return _MAX_BLOCK
    return max(1, min(_MAX_BLOCK, int(_MAX_SCALE_DECADES / -math.log10(weight))))


def ema_extend(values: np.ndarray, weight: float, acc: float) -> tuple[np.ndarray, float]:
    """The running averages ``acc_i`` over the finite ``values``, continuing from ``acc``.

    Returns the (not yet debiased) average after each value, in order, and the
    last one. Vectorised: within a block of B values ``acc_j = w**(j+1) * A + (1-w) * w**j *
    cumsum(x_l * w**-l)``; only the B-th values carry from block to block in Python.
    """
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n == 0:
        return np.empty(0), acc
    if weight == 0.0:
        return x.copy(), float(x[-1])
    size = _block_size(weight)
    blocks = -(-n // size)
    padded = np.zeros(blocks * size)
    padded[:n] = x
    grid = padded.reshape(blocks, size)
    powers = weight ** np.arange(size + 1, dtype=np.float64)  # w**0 .. w**B
    inner = np.cumsum(grid / powers[:size], axis=1) * powers[:size] * (1.0 - weight)
    # The running average entering each block: a scan over blocks, not points.
    carry = np.empty(blocks)
    decay = powers[size]
    for b, last in enumerate(inner[:, -1].tolist()):
        carry[b] = acc
        acc = decay * acc + last
    out = (inner + carry[:, None] * powers[1:]).ravel()[:n]
    return out, float(out[-1])


class Smoother:
    """The smoothed values of one series at one weight, kept up to date incrementally.

    :meth:`update` smooths only the points added since the last call; a series
    whose earlier points changed (a rewind) is smoothed again from the start.
    Smoothed values are kept as float32: they are drawn, never summed further.
    """

    __slots__ = ("_acc", "_count", "_first", "_flat", "_out", "_rewinds", "weight")

    def __init__(self, weight: float) -> None:
        self.weight = check_smoothing(weight)
        self._reset()

    def _reset(self) -> None:
        self._acc = 0.0
        self._count = 0  # finite values averaged so far
        self._first: float | None = None
        self._flat = 0  # leading points that all equal the first: drawn as they are
        self._out = Column(np.float32)
        self._rewinds = -1

    def __len__(self) -> int:
        return len(self._out)

    def update(self, series: Series) -> None:
        """Smooth whatever ``series`` gained since the last call."""
        if series.rewinds != self._rewinds or len(series) < len(self._out):
            self._reset()
            self._rewinds = series.rewinds
        start = len(self._out)
        while start < len(series):
            chunk = series.values(start, start + _CHUNK)
            self._out.append(self._smooth(chunk))
            start += len(chunk)

    def _smooth(self, x: np.ndarray) -> np.ndarray:
        finite = np.isfinite(x)
        every = bool(finite.all())
        xf = x if every else x[finite]
        if len(xf) == 0:
            return x
        averages, self._acc = ema_extend(xf, self.weight, self._acc)
        averages /= self._debias(len(xf))
        self._count += len(xf)
        if every:
            out = averages
        else:
            out = x.copy()
            out[finite] = averages
        # TensorBoard leaves a series that never changes unsmoothed.
        if self._first is None:
            self._first = float(x[0])
        if self._flat == len(self._out):
            differs = np.flatnonzero(x != self._first)
            self._flat += len(x) if len(differs) == 0 else int(differs[0])
        return out

    def _debias(self, n: int) -> np.ndarray:
        """``1 - w**i`` for the next ``n`` finite points (i counted from the series' first)."""
        debias = np.ones(n)
        if self.weight > 0.0:
            # Past this many points w**i < 1e-17 and 1 - w**i is exactly 1.0.
            settled = math.ceil(-17.0 / math.log10(self.weight))
            head = max(0, min(n, settled - self._count))
            if head:
                counts = np.arange(self._count + 1, self._count + head + 1, dtype=np.float64)
                debias[:head] -= self.weight**counts
        return debias

    def values(self, start: int = 0) -> np.ndarray:
        """Smoothed values from index ``start``, as float64."""
        out = self._out.array(start, dtype=np.float64)
        # A flat stretch is the value itself, exactly: float32 rounding of it
        # would draw the smoothed line apart from the raw one.
        if start < self._flat:
            out[: self._flat - start] = self._first
        return out
