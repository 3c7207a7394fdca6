"""One store's summary for the catalog: from its status alone where status repeats meta's
name and options, from both documents for a store written before it did."""

from __future__ import annotations

import os

import pytest

from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from snapshot_store.read.local_source import LocalSource
from visualizer.sources.summary_read import read_summary, status_version


def _run(root, options):
    store = root / "run" / "pickle"
    with Recorder(store, options=options, name="sweep/run-7") as rec:
        rec.log({"loss": 0.5}, step=3)
    return store


def _rewrite_status(store, change):
    path = store / fmt.STATUS_FILE
    status = fmt.decode_document(path.read_bytes(), path)
    change(status)
    path.write_bytes(fmt.encode_document(status))


def test_a_store_is_known_from_its_status_alone(tmp_path):
    store = _run(tmp_path, {"lr": 0.1})
    (store / fmt.META_FILE).write_bytes(b"\x00not a frame")  # never read: no warning either
    read = read_summary(LocalSource(store), whole=False)
    assert read.meta == {"name": "sweep/run-7", "options": {"lr": 0.1}}
    assert read.summary.config == {"lr": 0.1} and read.summary.state == "finished"
    assert read.summary.series["train/loss"].last == 0.5
    assert "options" not in read.summary.status  # held once, as the config


def test_status_wins_over_the_meta_known_before(tmp_path):
    # A run that set its options again after the catalog first read it.
    store = _run(tmp_path, {"lr": 0.2})
    read = read_summary(LocalSource(store), {"name": "old", "options": {"lr": 0.1}}, whole=False)
    assert read.meta["options"] == {"lr": 0.2} and read.summary.config == {"lr": 0.2}


@pytest.mark.parametrize(
    "change",
    [
        lambda status: [status.pop("name"), status.pop("options")],  # written before it did
        lambda status: status.update(name=["not", "a", "name"]),  # hostile shapes
        lambda status: status.update(options="lr=0.1"),
    ],
    ids=["older store", "name not text", "options not a dict"],
)
def test_a_status_without_meta_as_written_is_read_with_meta_pickle(tmp_path, change):
    store = _run(tmp_path, {"lr": 0.1})
    _rewrite_status(store, change)
    read = read_summary(LocalSource(store), whole=False)
    assert read.meta["name"] == "sweep/run-7" and "sessions" in read.meta  # meta.pickle's
    assert read.summary.config == {"lr": 0.1}


def test_a_status_version_is_one_number_that_changes_with_its_size_or_mtime(tmp_path):
    store = _run(tmp_path, {"lr": 0.1})
    path, source = store / fmt.STATUS_FILE, LocalSource(store)
    version = status_version(source)
    assert type(version) is int, "one int a run, not a tuple of two"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert status_version(source) not in (version, None)
    path.write_bytes(path.read_bytes() + b"\0")  # one byte more, at the mtime it had
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert status_version(source) not in (version, None)
    path.write_bytes(path.read_bytes()[:-1])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert status_version(source) == version
    path.unlink()
    assert status_version(source) is None
