"""``add_custom_scalars`` and its two one-chart forms: a layout of scalar charts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trainer.tensorboard.summaries.record import Record

LAYOUT_TAG = "custom_scalars"


def custom_scalars(layout: Mapping[Any, Mapping[Any, Sequence[Any]]]) -> Record:
    """A layout ``{category: {title: ["Multiline" | "Margin", [tags]]}}``, names as text."""
    plain_layout = {
        str(category): {
            str(title): [chart[0], [str(t) for t in chart[1]]] for title, chart in charts.items()
        }
        for category, charts in layout.items()
    }
    return Record("layout", LAYOUT_TAG, {"layout": plain_layout})


def one_chart(kind: str, tags: Sequence[str], category: str, title: str) -> Record:
    """The layout of one chart: ``kind`` "Multiline" draws ``tags`` as lines; "Margin"
    draws a value and its lower and upper bound (three tags, else ValueError)."""
    if kind == "Margin" and len(tags) != 3:
        raise ValueError(f"a margin chart of {len(tags)} tags {list(tags)}; expected 3")
    return custom_scalars({category: {title: [kind, list(tags)]}})
