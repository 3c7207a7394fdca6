"""The one rule for what a store or a bucket says on the page: data, never markup.

What a run wrote (run names, tags, options, hparams, text records, a tensor's
dtype, status fields, ...) and what a bucket's keys say reach visdom's page
where it reads HTML in two places: a text pane's content (the page sets it as
``innerHTML``) and the strings Plotly draws (trace names, titles, axis titles,
hover text, in Plotly's HTML subset of links, styles and line breaks).

:func:`escaped` is the one escape for both: the character references it writes are
those the HTML parser and Plotly both decode, so a value reads on the page as it
was written. :class:`Html` marks the fragments this package builds itself; the
builders here (:func:`element`, :func:`row`, :func:`link`) escape every other
value they are given, and :func:`plot_strings` escapes the strings Plotly reads
in every message the visdom client sends. visdom's own pane titles, env names
and image captions are React text: they take values as they are (escaped, they
would show ``&lt;``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Decoded by HTML in text and quoted attributes, and by Plotly's own entity decoder
# (which knows &amp; &lt; &gt; and numeric references, not &quot;).
_REFERENCES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})
# Trace fields and layout titles Plotly draws as its HTML subset.
_TRACE_TEXT = ("name", "text", "hovertext")
_TITLED = ("xaxis", "yaxis")
# A parallel-coordinates axis's texts.
_AXIS_TEXT = ("label", "ticktext")


class Html(str):
    """Markup this package built; :func:`escaped` passes it through unchanged."""

    __slots__ = ()


def escaped(value: object) -> Html:
    """``value`` as it reads on the page: an :class:`Html` fragment as is, anything else escaped."""
    if isinstance(value, Html):
        return value
    return Html(str(value).translate(_REFERENCES))


def join(*parts: object) -> Html:
    """The parts one after another, each as :func:`escaped`."""
    return Html("".join(escaped(part) for part in parts))


def element(tag: str, *content: object, attrs: str = "") -> Html:
    """``<tag attrs>content</tag>``; ``attrs`` is this package's own (a style), never data."""
    return Html(f"<{tag}{attrs}>{join(*content)}</{tag}>")


def link(href: str, label: object, attrs: str = "") -> Html:
    """A link to ``href`` (a URL this package made) reading ``label``."""
    return Html(f'<a href="{escaped(href)}"{attrs}>{escaped(label)}</a>')


def row(cells: Iterable[object], tag: str = "td", attrs: str = "") -> Html:
    """A table row of ``cells`` (each :func:`escaped`), each cell ``<tag attrs>``."""
    return element("tr", *(element(tag, cell, attrs=attrs) for cell in cells))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    if isinstance(value, dict) and isinstance(value.get("text"), str):  # {"text": ..., "x": ...}
        return {**value, "text": escaped(value["text"])}
    return value


def _dimension(value: Any) -> Any:
    """A parallel-coordinates axis with its label and tick texts escaped."""
    if not isinstance(value, dict):
        return value
    return {k: _escaped(v) if k in _AXIS_TEXT else v for k, v in value.items()}


def _trace(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace with the strings Plotly reads escaped: its name and texts, a parallel-coordinates
    trace's axes and its color bar's title."""
    out = {k: _escaped(v) if k in _TRACE_TEXT else v for k, v in trace.items()}
    if isinstance(out.get("dimensions"), list):
        out["dimensions"] = [_dimension(d) for d in out["dimensions"]]
    bar = out.get("line", {}).get("colorbar") if isinstance(out.get("line"), dict) else None
    if isinstance(bar, dict) and "title" in bar:
        out["line"] = {**out["line"], "colorbar": {**bar, "title": _escaped(bar["title"])}}
    return out


def plot_strings(msg: dict[str, Any]) -> dict[str, Any]:
    """``msg`` (a visdom message) with the strings Plotly reads escaped; other messages as they are."""
    data, layout = msg.get("data"), msg.get("layout")
    if isinstance(data, list) and any(
        isinstance(t, dict) and ("x" in t or "dimensions" in t) for t in data
    ):
        data = [_trace(t) if isinstance(t, dict) else t for t in data]
        msg = {**msg, "data": data}
    if isinstance(layout, dict) and layout:
        layout = {**layout}
        if "title" in layout:
            layout["title"] = _escaped(layout["title"])
        for axis in _TITLED:
            if isinstance(layout.get(axis), dict) and "title" in layout[axis]:
                layout[axis] = {**layout[axis], "title": _escaped(layout[axis]["title"])}
        msg = {**msg, "layout": layout}
    return msg
