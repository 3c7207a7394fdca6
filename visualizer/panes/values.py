"""How the page prints a config or summary value: one number format beside the metrics.

A float prints with :data:`SIGNIFICANT` significant digits, as the metric columns do
(``0.177939``, not ``0.17793913926482965``); a cell that shows fewer digits than the
number says the whole of it on hover (a ``title``). The exports (CSV, Parquet) keep every
digit: they do not print through here.
"""

from __future__ import annotations

from typing import Any

from visualizer import markup

SIGNIFICANT = 6


def full_text(value: Any) -> str:
    """The whole value as text: a string as it is, anything else as Python writes it."""
    return value if isinstance(value, str) else repr(value)


def value_text(value: Any, max_chars: int) -> str:
    """``value`` as the page prints it: a float to :data:`SIGNIFICANT` digits, a text cut
    past ``max_chars`` characters."""
    is_float = isinstance(value, float)
    text = f"{value:.{SIGNIFICANT}g}" if is_float else full_text(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def value_cell(value: Any, max_chars: int) -> markup.Html:
    """A table cell's content for ``value``: :func:`value_text`, the whole number on hover
    where it shows fewer digits (a long text is cut, not repeated: a pane keeps its budget)."""
    text, full = value_text(value, max_chars), full_text(value)
    if text == full or not isinstance(value, float):
        return markup.escaped(text)
    return markup.Html(f'<span title="{markup.escaped(full)}">{markup.escaped(text)}</span>')
