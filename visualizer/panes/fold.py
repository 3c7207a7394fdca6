"""Many tags degrade gracefully: past :data:`MAX_WINDOWS` plot windows, a run's groups fold.

A run that logs thousands of distinct groups (``layer0/grad`` ... ``layer9999/grad``)
would get a window each, and a page of thousands of plots never finishes loading.
So past :data:`MAX_WINDOWS` plot windows in a run's env, the windows of the
groups that share a prefix (a group's name up to its first digit or separator:
``layer12.attn`` and ``layer7`` share ``layer``) are drawn as one window, a trace
per series named ``group/name``, at most :data:`MAX_FOLDED_SERIES` of them (the
first in natural order: ``g2`` before ``g10``). The conventional windows (losses, validation, metrics,
learning rate, throughput) are never folded, and at most :data:`MAX_WINDOWS`
plot windows are drawn in all. The comparison env draws its first
:data:`MAX_WINDOWS` series. What was left out is said on the page (the run's
options pane, the comparison's table); every series stays in the store and in
the CSV export. Grouping here is display only: stored names are never changed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from visualizer import layout, markup
from visualizer.markup import Html
from visualizer.model.rundata import SeriesKey

from .plotmessage import Line

MAX_WINDOWS = 40  # plot windows of one env drawn as they are
MAX_FOLDED_SERIES = 25  # series drawn in one folded window
# The conventional groups' windows come first (layout's orders below this) and stay whole.
_FOLDABLE_ORDER = 10
# The legend under a folded window's plot: a few series a row, each row this tall.
_LEGEND_PER_ROW, _LEGEND_ROW_PX = 6, 22
_PREFIX = re.compile(r"[^\d\s._:/-]*")

# A run's window: its spec, its traces' lines by label, and each label's series key.
RunWindow = tuple[layout.WindowSpec, dict[str, Line], dict[str, SeriesKey]]
W = TypeVar("W", bound=tuple)


@dataclass(frozen=True)
class Folding:
    """What an env's windows left out: windows it would have had, series it does not draw."""

    windows: int
    series: int
    hidden: int

    def note(self) -> Html:
        """One paragraph saying so, for the env's text pane."""
        return markup.element(
            "p",
            f"{self.windows:,} plot windows are too many for one page: groups that share a "
            f"prefix are drawn together, {self.series - self.hidden:,} of {self.series:,} "
            f"series in at most {MAX_WINDOWS} windows; the CSV has them all.",
            attrs=" style='color:#9a6700'",
        )


def prefix(group: str) -> str:
    """The part of ``group`` that names its kind: up to its first digit or separator."""
    return _PREFIX.match(group).group(0) or "other"  # type: ignore[union-attr]


def _natural(text: str) -> list[str | int]:
    """Sort key reading the numbers in ``text`` as numbers (``g2`` before ``g10``)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def plot_windows(keys: Iterable[SeriesKey]) -> int:
    """How many plot windows series ``keys`` would get, unfolded (one per group, as layout says)."""
    return len({layout.window_for(group, name).win for group, name in keys})


def fold_run(windows: list[RunWindow]) -> tuple[list[RunWindow], Folding | None]:
    """A run's windows as drawn: as they are up to :data:`MAX_WINDOWS`, else folded by prefix."""
    if len(windows) <= MAX_WINDOWS:
        return windows, None
    kept = [w for w in windows if w[0].order < _FOLDABLE_ORDER]
    by_prefix: dict[str, list[RunWindow]] = {}
    for window in windows:
        if window[0].order >= _FOLDABLE_ORDER:
            by_prefix.setdefault(prefix(window[0].title), []).append(window)
    folded = [_merged(name, members) for name, members in by_prefix.items()]
    drawn = kept + folded[: max(0, MAX_WINDOWS - len(kept))]
    series = sum(len(lines) for _, lines, _ in windows)
    shown = sum(len(lines) for _, lines, _ in drawn)
    return drawn, Folding(len(windows), series, series - shown)


def _merged(name: str, members: list[RunWindow]) -> RunWindow:
    """One window for the groups ``members`` show: its first MAX_FOLDED_SERIES series."""
    if len(members) == 1:
        return members[0]
    labels = sorted(
        (
            (f"{spec.title}/{label}", line, keys[label])
            for spec, lines, keys in members
            for label, line in lines.items()
        ),
        key=lambda item: _natural(item[0]),
    )[:MAX_FOLDED_SERIES]
    spec = layout.WindowSpec(
        f"folded_{layout.safe_id(name)}",
        f"{name}* ({len(members):,} groups)",
        name,
        min(spec.order for spec, _, _ in members),
        height=layout.PLOT_SIZE[1] + _LEGEND_ROW_PX * math.ceil(len(labels) / _LEGEND_PER_ROW),
    )
    return (
        spec,
        {label: line for label, line, _ in labels},
        {label: key for label, _, key in labels},
    )


def cap(windows: Sequence[W]) -> tuple[list[W], int]:
    """The first :data:`MAX_WINDOWS` of ``windows`` (the comparison's), and how many are left out."""
    return list(windows[:MAX_WINDOWS]), max(0, len(windows) - MAX_WINDOWS)
