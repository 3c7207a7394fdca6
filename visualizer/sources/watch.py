"""File events that wake the follow loop when a local store changes (watchdog: inotify on Linux).

Without watchdog, or on a filesystem without events (NFS, Lustre, FUSE), or past
the inotify watch limit, the loop polls instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .runs import LocalRuns, S3Runs

log = logging.getLogger(__name__)


class FileEvents:
    """Sets ``wake`` on any change under a local root of runs, once :meth:`start` could watch it."""

    def __init__(
        self,
        runs: LocalRuns | S3Runs,
        wake: threading.Event,
        poll_interval: float,
        enabled: bool = True,
        on_path: Callable[[str], None] | None = None,
    ) -> None:
        self.runs = runs
        self.wake = wake
        self.on_path = on_path  # told which file changed: which run to read again
        self.poll_interval = poll_interval
        self.enabled = enabled and isinstance(runs, LocalRuns)
        self._observer: Any = None
        self._starting = False
        self._stopped = False

    @property
    def active(self) -> bool:
        """True while file events under the root arrive."""
        return self._observer is not None

    def start(self) -> None:
        """Watch the root, once it exists, from a thread of its own (called every loop: cheap).

        Setting up watches walks the whole tree, seconds for 10,000 runs: the loop
        polls meanwhile, and is not held up.
        """
        if not self.enabled or self._starting or not isinstance(self.runs, LocalRuns):
            return
        if not self.runs.root.is_dir():
            return  # polled until it appears; then watched
        self._starting = True
        threading.Thread(target=self._watch, name="file-events-start", daemon=True).start()

    def _watch(self) -> None:
        assert isinstance(self.runs, LocalRuns)
        try:
            from watchdog.events import (
                DirCreatedEvent,
                DirMovedEvent,
                FileCreatedEvent,
                FileModifiedEvent,
                FileMovedEvent,
                FileSystemEventHandler,
            )
            from watchdog.observers import Observer
        except ImportError:
            log.info("watchdog is not installed: polling every %.1f s", self.poll_interval)
            self.enabled = False
            return

        wake, on_path = self.wake, self.on_path

        class _Wake(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if on_path is not None:
                    on_path(str(getattr(event, "dest_path", "") or event.src_path))
                wake.set()

        began = time.monotonic()
        observer = Observer()
        # Writes only: a reader's own opens and closes (10,000 runs read at the start)
        # would flood the kernel's event queue, and each overflow re-walks the tree.
        written = [
            DirCreatedEvent,
            DirMovedEvent,
            FileCreatedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        ]
        try:
            observer.schedule(_Wake(), str(self.runs.root), recursive=True, event_filter=written)
            observer.start()
        except OSError as err:  # inotify watch limit, or a filesystem without events
            log.info(
                "no file events for %s (%s): polling every %.1f s",
                self.runs.root,
                err,
                self.poll_interval,
            )
            self.enabled = False
            return
        self._observer = observer
        log.info(
            "file events on for %s: watches set up in %.1f s",
            self.runs.root,
            time.monotonic() - began,
        )
        if self._stopped:  # stopped while the watches were set up
            self.stop()

    def stop(self) -> None:
        """Stop watching (idempotent), in the background: taking down the watches of 10,000
        runs' folders takes seconds, which a stop on SIGTERM does not wait for."""
        self._stopped = True
        observer, self._observer = self._observer, None
        if observer is not None:
            threading.Thread(
                target=_stop, args=(observer,), name="file-events-stop", daemon=True
            ).start()


def _stop(observer: Any) -> None:
    observer.stop()
    observer.join(timeout=5)
