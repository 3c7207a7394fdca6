"""The writer of docs/benchmarks.md's tables: markers replaced, the rest of the page kept."""

from __future__ import annotations

import datetime

import pytest

from bench.__main__ import SUITES, main
from bench.tools.doc_tables import (
    PAGE,
    MarkerError,
    check_markers,
    machine_line,
    markdown_table,
    replace_table,
    write_table,
)

ROWS = [
    {"benchmark": "log a | b", "ours": "1.0 µs", "reference": "2.0 µs", "ratio": "2x",
     "target": "<= 1x", "met": False},
    {"benchmark": "replay", "ours": "1 s\n(wall)", "met": True},
]  # fmt: skip

PAGE_TEXT = """# Benchmarks

Intro, kept.

<!-- bench:store -->
| old | table |
|---|---|
| 1 | 2 |
<!-- /bench:store -->

Between, kept.

<!-- bench:loop -->
loop's old table
<!-- /bench:loop -->
Tail, kept.
"""


def test_a_suites_region_is_replaced_and_every_other_byte_kept(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text(PAGE_TEXT)
    write_table("store", ROWS, page)
    text = page.read_text()
    before, region_and_after = text.split("<!-- bench:store -->")
    region, after = region_and_after.split("<!-- /bench:store -->")
    assert before == PAGE_TEXT.split("<!-- bench:store -->")[0]
    assert after == PAGE_TEXT.split("<!-- /bench:store -->")[1]
    assert "old | table" not in region and "loop's old table" in after
    assert region.startswith("\nWritten by `python -m bench store` on ")
    assert "cores, load average" in region
    assert "| log a \\| b | 1.0 µs | 2.0 µs | 2x | <= 1x | **no** |" in region
    assert "| replay | 1 s (wall) |  |  |  | yes |" in region


def test_writing_twice_gives_one_table():
    once = replace_table(PAGE_TEXT, "loop", "table one")
    twice = replace_table(once, "loop", "table two")
    assert "table one" not in twice and twice.count("table two") == 1
    assert twice == PAGE_TEXT.replace("loop's old table", "table two")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("no markers at all\n", "found 0 and 0"),
        ("<!-- bench:loop -->\nonly the start\n", "found 1 and 0"),
        ("<!-- /bench:loop -->\n<!-- bench:loop -->\n", "comes before"),
        ("<!-- bench:loop -->\n<!-- /bench:loop -->\n<!-- bench:loop -->\n", "found 2 and 1"),
    ],
)
def test_a_missing_or_broken_marker_is_a_clear_error(tmp_path, text, problem):
    page = tmp_path / "benchmarks.md"
    page.write_text(text)
    with pytest.raises(MarkerError, match=problem) as raised:
        write_table("loop", ROWS, page)
    assert "<!-- bench:loop -->" in str(raised.value) or "comes before" in str(raised.value)
    assert page.read_text() == text  # nothing written


def test_the_heading_names_date_cores_and_load():
    when = datetime.datetime(2026, 1, 2, 3, 4, tzinfo=datetime.UTC)
    line = machine_line("viewer", when)
    assert line.startswith("Written by `python -m bench viewer` on 2026-01-02 03:04 UTC: ")
    assert "cores, load average" in line
    assert markdown_table([], line).splitlines()[0] == line


def test_the_page_has_a_region_for_every_suite():
    check_markers(PAGE, SUITES)


def test_bench_refuses_a_page_without_markers_before_running(capsys, tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("no markers\n")
    assert main(["store"], page) == 2
    assert "bench:store" in capsys.readouterr().err
