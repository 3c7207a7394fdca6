"""The comparison's colors: each run's or group's, the same in every window.

Plotly's ten colors first, then the ten again darker and dashed, then lighter and
dotted: thirty lines apart by color, then by dash (issue 48: ten groups drew in five
colors). Past thirty, hues spread by the golden angle. A label keeps its color while
it is drawn; a new one takes the first style no other label drawn holds.
"""

from __future__ import annotations

import colorsys
import itertools
from collections.abc import Iterator, Sequence

from visualizer.model.traces import LINE_DASHES

from .plotmessage import PALETTE


def _mixed(color: str, toward: float, amount: float) -> str:
    """``color`` (``#rrggbb``) mixed by ``amount`` toward black (0.0) or white (1.0)."""
    channels = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    mixed = (round(c + (toward * 255 - c) * amount) for c in channels)
    return "#" + "".join(f"{c:02x}" for c in mixed)


_DASHED = tuple(_mixed(color, 0.0, 0.35) for color in PALETTE)
_DOTTED = tuple(_mixed(color, 1.0, 0.35) for color in PALETTE)
LINE_DASHES.update(dict.fromkeys(_DASHED, "dash") | dict.fromkeys(_DOTTED, "dot"))
STYLES = PALETTE + _DASHED + _DOTTED  # apart by color, then by dash


def run_color(index: int) -> str:
    """The color of the ``index``-th run or group: :data:`STYLES`, then hues spread by the
    golden angle."""
    if index < len(STYLES):
        return STYLES[index]
    hue = (index * 0.618033988749895) % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.45, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def _styles() -> Iterator[str]:
    return (run_color(index) for index in itertools.count())


def assign_colors(labels: Sequence[str], colors: dict[str, str], fixed: dict[str, str]) -> None:
    """A color in ``colors`` for each of ``labels`` (in the order they are listed): ``fixed``'s
    (the baseline's), else the one it had while no other label drawn holds it, else the first
    style none holds. ``colors`` is the very dict every window reads."""
    taken = {fixed[label] for label in labels if label in fixed}
    kept: dict[str, str] = {}
    for label in labels:
        color = colors.get(label)
        if label not in fixed and color is not None and color not in taken:
            kept[label] = color
            taken.add(color)
    free = (color for color in _styles() if color not in taken)
    for label in labels:
        colors[label] = fixed.get(label) or kept.get(label) or next(free)
