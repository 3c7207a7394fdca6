"""bench api's 100,000-run rows on 3 runs: runs written once and kept, listed by a process of
their own the first time and again from the cache."""

from __future__ import annotations

import re

from bench.bench_api import _big_rows, _sweep_rows
from bench.tools.kept_runs import MARKER, kept_runs


def test_kept_runs_are_written_once(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_KEPT_RUNS", str(tmp_path / "kept"))
    folder, took = kept_runs(3)
    assert took is not None and (folder / MARKER).is_file()
    assert sorted(p.name for p in folder.iterdir()) == [
        MARKER,
        "run-00000",
        "run-00001",
        "run-00002",
    ]
    assert kept_runs(3) == (folder, None)
    (folder / MARKER).unlink()  # written halfway: written again
    (folder / "run-00001" / "pickle" / "status.pickle").unlink()
    assert kept_runs(3)[1] is not None
    assert (folder / "run-00001" / "pickle" / "status.pickle").is_file()


def test_the_listing_rows_name_the_first_and_the_cached_listing(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_KEPT_RUNS", str(tmp_path / "kept"))
    first, again = _big_rows(tmp_path, 3)
    assert "3 runs listed the first time" in first["benchmark"]
    assert "again (their documents from the cache)" in again["benchmark"]
    assert list((tmp_path / "cache" / "remote-train-monitor" / "api-summaries").glob("*.jsonl"))
    for row in (first, again):
        assert "peak RSS" in row["ours"] and row["target"] == "<= 10 s and <= 500 MB"


def test_the_sweep_rows_list_and_export_three_runs(tmp_path, monkeypatch):
    """The listing and the Parquet export of the first runs (copied: a link out of the
    exported folder is not followed, and a folder of links exported nothing)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    listed, exported = _sweep_rows(tmp_path, 3)
    assert "3 runs listed" in listed["benchmark"] and listed["ours"].endswith("CPU)")
    assert re.search(r"export of 3 runs \([1-9][\d,]* points\)", exported["benchmark"]), exported
    assert exported["ratio"].endswith("x faster"), exported
