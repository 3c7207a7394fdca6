"""File events that wake the follow loop when a local store changes (watchdog: inotify on Linux).

Events are there to find a new run at once and to read a running run's new points at
once. A directory of runs is watched for those only: the root (a new run's folder comes),
the store folder of each run not ended (its files), and a new folder until its store is
known. A run that ended writes no more, so its folders get no watch: 100,000 finished
runs' 200,000 folders held 110 MB of watches and took seconds of CPU to set up. The
catalog's sweep of every status sees one resume (``--continue-train``), and its store is
watched again. A root that is one run is watched whole.

Without watchdog, or on a filesystem without events (NFS, Lustre, FUSE), or past
the inotify watch limit, the loop polls instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from .catalog import Catalog
from .runs import LocalRuns
from .store_folders import is_folder, subfolders

log = logging.getLogger(__name__)

Watched = dict[str, bool]  # a folder watched, and whether with its subfolders
NEW_RUN_S = 5.0  # seconds a new folder's store is looked for each second (then at events)
# watchdog takes an inotify instance and a thread for each folder watched, and a user has 128
# instances (Linux's default): past this many runs not ended the root is watched whole (one
# instance), and run by run again once they are half as many.
MAX_RUN_WATCHES = 64


class FileEvents:
    """Sets ``wake`` on a change in a local root of runs, once :meth:`start` could watch it; a
    changed file's run is marked for a read in ``catalog`` (:meth:`Catalog.touched`)."""

    def __init__(
        self, catalog: Catalog, wake: threading.Event, poll_interval: float, enabled: bool = True
    ) -> None:
        self.catalog = catalog
        self.wake = wake
        self.poll_interval = poll_interval
        self.enabled = enabled and isinstance(catalog.runs, LocalRuns)
        self._observer: Any = None
        self._handler: Any = None
        self._watched: Watched = {}
        self._watches: dict[str, Any] = {}  # each folder's watch; None: it could not be watched
        # Folders come without a known store, and when (watchdog's thread adds them).
        self._new: dict[str, float] = {}
        self._woken = 0.0  # when the loop was last woken for a new folder's store
        self._lock = threading.Lock()  # over _new
        self._starting = False
        self._stopped = False

    @property
    def active(self) -> bool:
        """True while file events under the root arrive."""
        return self._observer is not None

    def start(self) -> None:
        """Watch the root, once it exists, from a thread of its own; then keep the watches on the
        runs not ended (called every loop: cheap while no run starts or ends)."""
        runs = self.catalog.runs
        if self._observer is not None:
            self._keep()
            return
        if not self.enabled or self._starting or not isinstance(runs, LocalRuns):
            return
        if not runs.root.is_dir():
            return  # polled until it appears; then watched
        self._starting = True
        wanted = self._wanted()
        stores = list(self.catalog.entries)  # for the folders without a store: on that thread
        threading.Thread(
            target=self._watch, args=(wanted, stores), name="file-events-start", daemon=True
        ).start()

    def _watch(self, wanted: Watched, stores: list[str]) -> None:
        try:
            from watchdog.observers import Observer
        except ImportError:
            log.info("watchdog is not installed: polling every %.1f s", self.poll_interval)
            self.enabled = False
            return
        began = time.monotonic()
        root = str(self.catalog.runs)
        if not wanted[root]:  # a directory of runs: its folders without a store are new runs'
            at = len(root) + 1  # where a store's run folder's name starts in its key
            known = {f"{root}{os.sep}{store[at:].split(os.sep, 1)[0]}" for store in stores}
            with self._lock:
                self._new.update((f, began) for f in subfolders(root) if f not in known)
                wanted.update(dict.fromkeys(self._new, False))
        observer, self._handler = Observer(), self._make_handler()
        try:
            self._schedule(observer, root, wanted.pop(root))
            observer.start()
        except OSError as err:  # inotify watch limit, or a filesystem without events
            log.info(
                "no file events for %s (%s): polling every %.1f s", root, err, self.poll_interval
            )
            self.enabled = False
            return
        for folder, recursive in wanted.items():
            self._schedule(observer, folder, recursive)
        self._observer = observer
        log.info("file events on for %s: watches set up in %.1f s", root, time.monotonic() - began)
        if self._stopped:  # stopped while the watches were set up
            self.stop()

    def _make_handler(self) -> Any:
        from watchdog.events import FileSystemEventHandler

        wake, touched, came = self.wake, self.catalog.touched, self._came

        class _Wake(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                path = str(getattr(event, "dest_path", "") or event.src_path)
                touched(path)
                if event.is_directory:
                    came(path)
                wake.set()

        return _Wake()

    def _came(self, path: str) -> None:
        """A folder ``path`` came: a new run's (in the root) or its store (``<run>/pickle``),
        watched until its store is known (from watchdog's thread)."""
        parent, name = os.path.split(path)
        with self._lock:
            if parent == str(self.catalog.runs) or (name == "pickle" and parent in self._new):
                self._new[path] = time.monotonic()

    def _wanted(self) -> Watched:
        """The folders to watch now: the root; in a directory of runs, the stores of the runs
        not ended and the folders that came without a known store."""
        runs = self.catalog.runs
        root = str(runs)
        live = self.catalog.live
        whole = self._watched.get(root, False)
        if not runs.multi or len(live) > MAX_RUN_WATCHES // (2 if whole else 1):
            return {root: True}  # one run (or none yet), or many running: the whole tree
        wanted = dict.fromkeys(live, False)
        entries = self.catalog.entries
        with self._lock:
            self._new = {
                f: came
                for f, came in self._new.items()
                if f not in entries and f"{f}{os.sep}pickle" not in entries
            }
            wanted.update(dict.fromkeys(self._new, False))
        wanted[root] = False
        return wanted

    def _keep(self) -> None:
        """Watch what :meth:`_wanted` says, no more (on the loop's thread)."""
        wanted = self._wanted()
        with self._lock:
            came = max(self._new.values(), default=-NEW_RUN_S)
        now = time.monotonic()
        if now - came < NEW_RUN_S and now - self._woken >= 1:
            # A new run's files come just after its folder, before a watch on it is set: the
            # loop, which looks for new runs once a second when woken, is woken each second.
            self._woken = now
            self.wake.set()
        if wanted == self._watched:
            return
        for folder, recursive in list(self._watched.items()):
            if wanted.get(folder) != recursive:
                del self._watched[folder]
                watch = self._watches.pop(folder)
                if watch is not None:
                    self._observer.unschedule(watch)
        for folder, recursive in wanted.items():
            if folder not in self._watched:
                self._schedule(self._observer, folder, recursive)
        self.wake.set()  # what came before a new watch was set: found by the next pass

    def _schedule(self, observer: Any, folder: str, recursive: bool) -> None:
        """Watch ``folder``'s writes (not a reader's opens: 10,000 runs read at the start would
        flood the kernel's queue); a folder gone or past the watch limit is read on its time."""
        from watchdog.events import (
            DirCreatedEvent,
            DirMovedEvent,
            FileCreatedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )

        written = [DirCreatedEvent, DirMovedEvent, FileCreatedEvent, FileModifiedEvent]
        written.append(FileMovedEvent)
        watch = None
        try:
            watch = observer.schedule(
                self._handler, folder, recursive=recursive, event_filter=written
            )
        except OSError as err:
            log.info("no file events for %s (%s): read on its schedule", folder, err)
        self._watched[folder], self._watches[folder] = recursive, watch
        store = f"{folder}{os.sep}pickle"  # made before this watch was set, no event came for it
        if folder in self._new and is_folder(store):
            self._came(store)

    def stop(self) -> None:
        """Stop watching (idempotent), in the background: a stop on SIGTERM does not wait for
        the watches to come down."""
        self._stopped = True
        observer, self._observer = self._observer, None
        if observer is not None:
            threading.Thread(
                target=_stop, args=(observer,), name="file-events-stop", daemon=True
            ).start()


def _stop(observer: Any) -> None:
    observer.stop()
    observer.join(timeout=5)
