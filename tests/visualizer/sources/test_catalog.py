"""Every run under a root known by its summary, read in the background; read again only on change."""

from __future__ import annotations

import logging

from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from visualizer.sources.catalog import ENDED_RECHECK_S, Catalog
from visualizer.sources.runs import LocalRuns
from visualizer.sources.summary_memory import LIVE_ONLY


def _write(root, names, state="finished"):
    for i, name in enumerate(names):
        rec = Recorder(root / name / "pickle", options={"lr": 0.1 * i})
        rec.log({"loss": float(i)}, step=0)
        rec.log({"loss": float(i) / 2}, step=1)
        rec.close(state)


def _read_all(catalog):
    new = catalog.scan()
    read = []
    while not catalog.complete:
        read += catalog.collect(wait=5.0)
    return new, read


def test_many_runs_are_named_and_summarized_without_being_followed(tmp_path):
    names = [f"r{i:02d}" for i in range(12)]
    _write(tmp_path, names)
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=4)
    try:
        new, read = _read_all(catalog)
    finally:
        catalog.close()
    assert new == 12 and catalog.named == catalog.total == 12
    assert sorted(entry.spec.name for entry in read) == names
    summary = next(e.summary for e in read if e.spec.name == "r03")
    assert summary.state == "finished" and summary.config == {"lr": 0.1 * 3}
    stats = summary.series["train/loss"]
    assert (stats.count, stats.last, stats.min, stats.max) == (2, 1.5, 1.5, 3.0)


def test_many_runs_share_their_strings_and_hold_no_meta_their_status_repeats(tmp_path):
    _write(tmp_path, ["a", "b"])
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=1)
    try:
        _, read = _read_all(catalog)
    finally:
        catalog.close()
    a, b = (entry.summary for entry in sorted(read, key=lambda e: e.spec.name))
    assert list(a.series) == list(b.series) == ["train/loss"]
    assert next(iter(a.series)) is next(iter(b.series)), "one string, not one a run"
    assert next(iter(a.config)) is next(iter(b.config))
    assert all(x is y for x, y in zip(sorted(a.status), sorted(b.status), strict=True))
    assert a.status["state"] is b.status["state"], "a value repeated across runs: one string"
    assert "start_time" in a.status and not LIVE_ONLY & set(a.status), "ended: no heartbeat"
    assert all(entry.spec.name is entry.found.folder for entry in read), "one name string"
    # Status repeats meta's name and options: meta is read again from it, not held.
    assert all(entry.meta is None and entry.stored == entry.spec.name for entry in read)


def test_the_reads_of_a_prefetch_wait_for_its_release(tmp_path):
    _write(tmp_path, ["a", "b", "c"])
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=1)
    try:
        catalog.prefetch()
        assert catalog.scan() == 3
        assert catalog.collect(wait=0.2) == [] and not catalog.complete  # the page drawn first
        catalog.release()
        read = []
        while not catalog.complete:
            read += catalog.collect(wait=5.0)
    finally:
        catalog.close()
    assert sorted(entry.spec.name for entry in read) == ["a", "b", "c"]


def test_a_corrupt_store_among_many_is_one_warning_and_the_others_are_read(tmp_path, caplog):
    _write(tmp_path, ["a", "b", "c"])
    (tmp_path / "b" / "pickle" / fmt.STATUS_FILE).write_bytes(b"\x00not a frame" * 9)
    caplog.set_level(logging.WARNING)
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=1)
    try:
        _, read = _read_all(catalog)
    finally:
        catalog.close()
    states = {entry.spec.name: entry.summary.state for entry in read}
    assert states["a"] == states["c"] == "finished"
    assert states["b"] == "no status yet", "its status is unreadable; its points still count"
    warned = [r for r in caplog.records if fmt.STATUS_FILE in r.getMessage()]
    assert len(warned) == 1


def test_a_run_that_ended_is_read_again_only_when_its_files_change(tmp_path):
    _write(tmp_path, ["a", "b"])
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=0)
    try:
        _read_all(catalog)
        later = catalog.entries[next(iter(catalog.entries))].checked + ENDED_RECHECK_S + 1
        catalog.recheck(later, following=set())
        assert not any(entry.reading for entry in catalog.entries.values()), "nothing changed"
        with Recorder(tmp_path / "a" / "pickle") as rec:  # a resumed run
            rec.log({"loss": 9.0}, step=5)
            rec.flush()
            catalog.touched(str(tmp_path / "a" / "pickle" / fmt.STATUS_FILE))
            catalog.recheck(later, following=set())
            read = catalog.collect(wait=5.0)
        assert [entry.spec.name for entry in read] == ["a"]
        assert read[0].summary.state == "running"
        assert "heartbeat_seconds" in read[0].summary.status, "a running run's staleness"
    finally:
        catalog.close()
