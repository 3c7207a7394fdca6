"""The benchmark tables of docs/benchmarks.md, written by ``python -m bench`` between markers.

Each suite owns one region of the page, ``<!-- bench:SUITE -->`` ...
``<!-- /bench:SUITE -->``; a run replaces that region with its table, headed with
the date and the machine, and leaves every other byte of the page as it was. The
figures are then the machine's, not typed by hand.
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Iterable
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
COLUMNS = ("benchmark", "ours", "reference", "ratio", "target", "met")


class MarkerError(ValueError):
    """The page lacks a suite's markers (or has them twice, or out of order)."""


def start_marker(suite: str) -> str:
    return f"<!-- bench:{suite} -->"


def end_marker(suite: str) -> str:
    return f"<!-- /bench:{suite} -->"


def _region(text: str, suite: str, page: Path) -> tuple[int, int]:
    """Offsets of the region between ``suite``'s markers (markers excluded)."""
    start, end = start_marker(suite), end_marker(suite)
    if text.count(start) != 1 or text.count(end) != 1:
        raise MarkerError(
            f"{page}: expected one {start} and one {end} for the {suite!r} table, found "
            f"{text.count(start)} and {text.count(end)}; add them where the table goes"
        )
    begin, finish = text.index(start) + len(start), text.index(end)
    if finish < begin:
        raise MarkerError(f"{page}: {end} comes before {start}")
    return begin, finish


def check_markers(page: Path, suites: Iterable[str]) -> None:
    """Raise :class:`MarkerError` unless ``page`` has one region per suite (before any run)."""
    text = page.read_text(encoding="utf-8")
    for suite in suites:
        _region(text, suite, page)


def _cell(value: object) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "**no**"
    # A cell is one line; a pipe would end it early.
    return re.sub(r"\s+", " ", str(value)).strip().replace("|", "\\|")


def machine_line(suite: str, now: datetime.datetime | None = None) -> str:
    """The heading of a table: when, on how many cores, at which load."""
    now = now or datetime.datetime.now(datetime.UTC)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    loads = ", ".join(f"{value:.1f}" for value in load)
    return (
        f"Written by `python -m bench {suite}` on {now:%Y-%m-%d %H:%M} UTC: "
        f"{os.cpu_count()} cores, load average {loads} (1, 5, 15 min) at the end of the run."
    )


def markdown_table(rows: list[dict], heading: str) -> str:
    """``heading``, then the rows as a Markdown table of :data:`COLUMNS`."""
    lines = [heading, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def replace_table(text: str, suite: str, table: str, page: Path = PAGE) -> str:
    """``text`` with ``suite``'s region holding ``table``; every other byte kept."""
    begin, finish = _region(text, suite, page)
    return f"{text[:begin]}\n{table.strip()}\n{text[finish:]}"


def write_table(suite: str, rows: list[dict], page: Path = PAGE) -> None:
    """Write ``suite``'s rows into its region of ``page``, headed with the date and machine."""
    text = page.read_text(encoding="utf-8")
    table = markdown_table(rows, machine_line(suite))
    page.write_text(replace_table(text, suite, table, page), encoding="utf-8")
