"""How plots are shown (smoothing weight, x axis, y scale) and the page pane that changes it.

Each env has a visdom properties pane, :data:`CONTROLS_WIN`. A change made there
reaches the visualizer as a ``PropertyUpdate`` event (see
:class:`visualizer.visdom_client.VisdomEvents`); :func:`apply_event` turns it
into new :class:`ViewSettings`, and the env's plots are redrawn with them.
"""

from __future__ import annotations

import logging
import math
import reprlib
from dataclasses import dataclass, replace
from typing import Any

from visualizer import layout
from visualizer.model.smoothing import DEFAULT_SMOOTHING, check_smoothing

log = logging.getLogger(__name__)

CONTROLS_WIN = "view"
# What the x axis shows: its key, the choice's name on the page.
X_AXES = {"step": "step", "relative": "relative time", "wall": "wall time"}
Y_SCALES = ("linear", "log")
# Rows of the properties pane, in order: visdom reports a change by row number.
_SMOOTHING_ROW, _X_ROW, _Y_ROW = 0, 1, 2


@dataclass(frozen=True)
class ViewSettings:
    """One env's way of drawing its line plots."""

    smoothing: float = DEFAULT_SMOOTHING
    x_axis: str = "step"  # a key of X_AXES
    log_y: bool = False

    def __post_init__(self) -> None:
        check_smoothing(self.smoothing)
        if self.x_axis not in X_AXES:
            raise ValueError(f"x axis must be one of {', '.join(X_AXES)}, not {self.x_axis!r}")

    def axes(self) -> tuple[str, bool]:
        """What a plot's axes depend on: a change of it resets the plots' zoom."""
        return self.x_axis, self.log_y


def controls_message(env: str, settings: ViewSettings) -> dict[str, Any]:
    """visdom's ``events`` message drawing the properties pane that shows ``settings``."""
    rows = [
        {"type": "number", "name": "smoothing", "value": f"{settings.smoothing:g}"},
        {
            "type": "select",
            "name": "x axis",
            "value": list(X_AXES).index(settings.x_axis),
            "values": list(X_AXES.values()),
        },
        {
            "type": "select",
            "name": "y axis",
            "value": int(settings.log_y),
            "values": list(Y_SCALES),
        },
    ]
    return {
        "data": [{"content": rows, "type": "properties"}],
        "win": CONTROLS_WIN,
        "eid": env,
        # Small: three rows, not a default 20x20 pane.
        "opts": {"title": "view (smoothing 0 to <1)", "width": layout.VIEW_WIDTH, "height": 125},
    }


def apply_event(settings: ViewSettings, event: dict[str, Any]) -> ViewSettings:
    """``settings`` changed as the controls pane's ``PropertyUpdate`` ``event`` asks.

    A value that is not valid (a smoothing of 1 or more, text) leaves the settings
    as they are; the pane is redrawn with them, so the page shows what is in use.
    """
    row, value = event.get("propertyId"), event.get("value")
    try:
        if row == _SMOOTHING_ROW:
            weight = float(value)  # type: ignore[arg-type]
            if not math.isfinite(weight) or not 0.0 <= weight < 1.0:
                raise ValueError("smoothing must be at least 0 and below 1")
            return replace(settings, smoothing=weight)
        if row == _X_ROW:
            return replace(settings, x_axis=list(X_AXES)[_choice(value, len(X_AXES))])
        if row == _Y_ROW:
            return replace(settings, log_y=Y_SCALES[_choice(value, len(Y_SCALES))] == "log")
    except (TypeError, ValueError, OverflowError) as err:  # float() of an int past the floats
        log.warning("ignoring the page's view change %s: %s", reprlib.repr(value), err)
    return settings


def _choice(value: object, count: int) -> int:
    """A select row's ``value``: the index of one of its ``count`` choices; ValueError if not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("a choice is its index")
    index = int(value)  # the page sends it as text
    if not 0 <= index < count:
        raise ValueError(f"no choice {index} of {count}")
    return index
