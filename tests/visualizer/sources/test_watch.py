"""File events watch what may change: the root, the runs not ended, a new run's folders."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from snapshot_store import Recorder
from tests.fixtures.servers.waiting import wait_until
from visualizer.sources import watch
from visualizer.sources.catalog import Catalog
from visualizer.sources.runs import LocalRuns
from visualizer.sources.watch import FileEvents

pytest.importorskip("watchdog")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads inotify's watches in /proc")


def _watched_inodes() -> set[int]:
    """The inodes this process's inotify instances watch (Linux: /proc/self/fdinfo)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:  # closed meanwhile
            continue
        for line in info.splitlines():
            if line.startswith("inotify wd:"):
                fields = dict(part.split(":", 1) for part in line.split()[1:])
                inodes.add(int(fields["ino"], 16))
    return inodes


def _watched(*folders: Path) -> list[bool]:
    inodes = _watched_inodes()
    return [folder.stat().st_ino in inodes for folder in folders]


def _read(catalog: Catalog) -> None:
    while not catalog.complete:
        catalog.collect(wait=5.0)


def _state(catalog: Catalog, store: Path) -> str:
    summary = catalog.entries[str(store)].summary
    return "" if summary is None else summary.state


def _kept(events: FileEvents, check) -> bool:
    events.start()  # as the follow loop does at every pass
    return check()


def _finished(store: Path) -> None:
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=0)


def _running(store: Path) -> Recorder:
    rec = Recorder(store)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    return rec


@contextmanager
def _watching(root: Path) -> Iterator[tuple[Catalog, FileEvents]]:
    """Every run under ``root`` read, and file events on, as the follow loop has them."""
    catalog = Catalog(LocalRuns(root), 1.0, 60.0, few=0)
    events = FileEvents(catalog, threading.Event(), 1.0)
    try:
        catalog.scan()
        _read(catalog)
        events.start()
        wait_until(lambda: events.active)
        yield catalog, events
    finally:
        events.stop()
        catalog.close()


def test_a_finished_runs_folders_get_no_watch_and_a_resumed_run_is_watched_again(tmp_path):
    done, live = tmp_path / "done" / "pickle", tmp_path / "live" / "pickle"
    _finished(done)
    running = _running(live)
    try:
        with _watching(tmp_path) as (catalog, events):
            assert (
                _watched(tmp_path, live, done, done.parent, live.parent) == [True] * 2 + [False] * 3
            )
            running.log({"loss": 0.5}, step=1)
            running.flush()
            wait_until(lambda: catalog.entries[str(live)].dirty)  # an event named the live run
            with Recorder(done) as resumed:  # --continue-train: its status says running
                resumed.flush()
                later = time.monotonic() + 3600.0  # the sweep of every status, come due
                catalog.recheck(later, following=set())
                wait_until(lambda: catalog.collect(wait=1.0) and _state(catalog, done) == "running")
                wait_until(lambda: _kept(events, lambda: _watched(done)[0]))
                resumed.log({"loss": 0.2}, step=9)
                resumed.flush()
                wait_until(lambda: catalog.entries[str(done)].dirty)
            catalog.recheck(later, following=set())  # the event named it: read again, ended
            wait_until(lambda: catalog.collect(wait=1.0) and _state(catalog, done) == "finished")
            wait_until(lambda: _kept(events, lambda: not _watched(done)[0]))
            assert _watched(tmp_path, live) == [True, True]
    finally:
        running.close()


def test_a_new_runs_folders_are_watched_until_its_store_is_known(tmp_path):
    with Recorder(tmp_path / "old" / "pickle") as rec:
        rec.log({"loss": 1.0}, step=0)
    catalog = Catalog(LocalRuns(tmp_path), 1.0, 60.0, few=0)
    woken = threading.Event()
    events = FileEvents(catalog, woken, 1.0)
    try:
        catalog.scan()
        _read(catalog)
        events.start()
        wait_until(lambda: events.active)
        woken.clear()
        new = tmp_path / "new"
        new.mkdir()
        wait_until(woken.is_set)  # the root's watch saw it come
        wait_until(lambda: _kept(events, lambda: _watched(new)[0]))
        woken.clear()  # its store may come before a watch on it: the loop is woken to look
        wait_until(lambda: _kept(events, woken.is_set))
        (new / "pickle").mkdir()
        wait_until(lambda: _kept(events, lambda: _watched(new / "pickle")[0]))
        running = Recorder(new / "pickle")
        try:
            running.log({"loss": 1.0}, step=0)
            running.flush()
            assert catalog.scan() == 1
            _read(catalog)
            assert _state(catalog, new / "pickle") == "running"
            wait_until(lambda: _kept(events, lambda: _watched(new, new / "pickle") == [0, 1]))
        finally:
            running.close()
    finally:
        events.stop()
        catalog.close()


def test_past_max_run_watches_running_runs_the_root_is_watched_whole(tmp_path, monkeypatch):
    """watchdog takes an inotify instance a folder watched, and a user has 128: many running
    runs are watched through the root, whole, and run by run again once half as many."""
    monkeypatch.setattr(watch, "MAX_RUN_WATCHES", 2)
    done = tmp_path / "done" / "pickle"
    _finished(done)
    running = [_running(tmp_path / f"live{i}" / "pickle") for i in range(3)]
    try:
        with _watching(tmp_path) as (catalog, events):
            assert _watched(tmp_path, done.parent, done) == [True] * 3, "3 running: the whole tree"
            for rec in running[:2]:  # 1 left running: run by run again
                rec.close()
            later = time.monotonic() + 3600.0  # the sweep of every status, come due
            catalog.recheck(later, following=set())
            wait_until(lambda: catalog.collect(wait=1.0) and len(catalog.live) == 1)
            live = tmp_path / "live2" / "pickle"
            wait_until(lambda: _kept(events, lambda: _watched(done, live) == [False, True]))
    finally:
        for rec in running:
            rec.close()
