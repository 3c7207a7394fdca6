"""Plotly traces as visdom draws them: the x of a wall time, JSON-safe values, colors, a line.

Shared by :mod:`visualizer.panes.plotwindow` (which decides what a window draws) and
:mod:`visualizer.model.zoom` (which maps a zoomed x range back onto the stored points).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from visualizer import layout

# The raw curve under a smoothed one is faint through its color's alpha: visdom's
# page resets every line trace's opacity to 1.
RAW_ALPHA = 0.3
# The dots of a sparse series: visible alone, small beside a line's width.
MARKER_SIZE = 6
# The baseline run's color in the comparison (--baseline), no other run's (compare.run_color):
# its lines are dashed too, so that it reads as the reference in every window.
BASELINE_COLOR = "#000000"
# The colors a line is drawn dashed or dotted in: the baseline's, and the comparison's past
# its ten solid ones (:mod:`visualizer.panes.palette` adds those).
LINE_DASHES: dict[str, str] = {BASELINE_COLOR: "dash"}


def local_ms(times: np.ndarray) -> np.ndarray:
    """Wall times as Plotly date values: milliseconds of the local clock.

    Plotly shows a date axis in UTC; shifting each time by the local UTC offset
    of that moment (daylight saving included) makes the axis read local time.
    """
    offsets = [time.localtime(t).tm_gmtoff if np.isfinite(t) else 0 for t in times.tolist()]
    return (times + np.asarray(offsets, dtype=np.float64)) * 1000.0


def epoch_seconds(ms: float) -> float:
    """The wall time (seconds since the epoch) that :func:`local_ms` draws at ``ms``."""
    shifted = ms / 1000.0
    guess = shifted - time.localtime(shifted).tm_gmtoff
    return shifted - time.localtime(guess).tm_gmtoff  # the offset of the moment itself


def json_floats(values: np.ndarray) -> list:
    """Values as a JSON-safe list: NaN and +/-inf become None (a gap in the line)."""
    finite = np.isfinite(values)
    out = values.tolist()
    if not finite.all():
        for i in np.flatnonzero(~finite).tolist():
            out[i] = None
    return out


def faint(color: str, alpha: float = RAW_ALPHA) -> str:
    """``#rrggbb`` as an ``rgba()`` color at ``alpha``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def line(
    label: str, x: np.ndarray, y: np.ndarray, color: str, legend: bool, markers: bool = False
) -> dict[str, Any]:
    """A line trace of series ``label`` (``legend``: its entry in the legend; a wider line;
    ``markers``: a dot on each point, for a sparse series whose line alone draws little)."""
    # Points without an x (a time that was never recorded) are left out:
    # visdom's append can not take a None x.
    keep = np.isfinite(x) if x.dtype.kind == "f" else slice(None)
    trace = {
        "x": x[keep].tolist(),
        "y": json_floats(y[keep]),
        "name": label,
        "type": "scatter",
        "mode": layout.LINES_MODE,
        "legendgroup": label,
        "showlegend": legend,
        "line": {"color": color, "width": 1.5 if legend else 1.0},
    }
    if (dash := LINE_DASHES.get(color)) is not None:
        trace["line"]["dash"] = dash
    if markers:  # a single point draws no line at all
        trace |= {"mode": "lines+markers", "marker": {"color": color, "size": MARKER_SIZE}}
    return trace


# A group's min-max band: its color, translucent, under the group's mean.
BAND_ALPHA = 0.2
# The mean's hover names the group and its spread; the name is Plotly's own (already text).
BAND_HOVER = (
    "%{fullData.name}<br>mean %{y:.4g}<br>min %{customdata[0]:.4g}"
    "<br>max %{customdata[1]:.4g}<extra></extra>"
)


def band_traces(
    label: str, x: np.ndarray, low: np.ndarray, high: np.ndarray, color: str
) -> list[dict[str, Any]]:
    """The band of group ``label`` between ``low`` and ``high``: the min as an unseen line, then
    the max filled down to it; both hidden with the group's legend entry, silent on hover."""
    keep = np.isfinite(x) if x.dtype.kind == "f" else slice(None)
    common = {
        "x": x[keep].tolist(),
        "name": label,
        "type": "scatter",
        "mode": layout.LINES_MODE,
        "legendgroup": label,
        "showlegend": False,
        "hoverinfo": "skip",
        "meta": "band",
        "line": {"color": color, "width": 0},
    }
    return [
        {**common, "y": json_floats(low[keep])},
        {
            **common,
            "y": json_floats(high[keep]),
            "fill": "tonexty",
            "fillcolor": faint(color, BAND_ALPHA),
        },
    ]


def spread(
    trace: dict[str, Any], x: np.ndarray, low: np.ndarray, high: np.ndarray
) -> dict[str, Any]:
    """A group's mean ``trace`` (drawn at ``x``) whose hover also reads the group's min and max."""
    keep = np.isfinite(x) if x.dtype.kind == "f" else slice(None)
    pairs = json_floats(np.stack((low[keep], high[keep]), axis=1).ravel())
    customdata = [pairs[i : i + 2] for i in range(0, len(pairs), 2)]
    return trace | {"customdata": customdata, "hovertemplate": BAND_HOVER}
