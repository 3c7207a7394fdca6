"""What the visualizer knows about one run, fed by the store reader's updates."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from snapshot_store.read.store_reader import Update

from .extradata import ExtraData
from .series import Series
from .status import EtaEstimator

SeriesKey = tuple[str, str]  # (group, name)
# Image snapshots kept per (group, name) for the page's history slider.
IMAGE_HISTORY = 30


@dataclass(frozen=True)
class ImageSnapshot:
    """The latest PNG logged under one (group, name)."""

    group: str
    name: str
    step: int
    png: bytes
    captions: tuple[str, ...] = ()  # as logged with it (W&B's), one an image of a grid


class RunData:
    """Series, latest images and the meta/status documents of one run.

    :meth:`apply` records what changed since the display last looked, so the
    display can send only that, and counts the updates that brought anything
    in :attr:`version` (a display with nothing new to show skips the run).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.series: dict[SeriesKey, Series] = {}
        self.images: dict[SeriesKey, ImageSnapshot] = {}
        self.image_history: dict[SeriesKey, deque[ImageSnapshot]] = {}  # the latest last
        self.images_logged: dict[SeriesKey, int] = {}  # snapshots ever read, per key
        self.meta: dict[str, Any] | None = None
        self.status: dict[str, Any] | None = None
        self.eta = EtaEstimator()
        self.extras = ExtraData()  # text, histograms, hparams... (extradata.py)
        self.changed_images: set[SeriesKey] = set()
        self.status_changed = False
        self.version = 0

    def apply(self, update: Update) -> bool:
        """Merge one reader update; True when anything is new."""
        for group, name, steps, _epochs, times, values in update.scalars:
            series = self.series.get((group, name))
            if series is None:
                series = self.series[(group, name)] = Series()
            series.extend(steps, values, times)
        for group, name, step, _epoch, _time, png, *captions in update.images:
            # The last one logged wins, as for scalars: a resumed run's newest image.
            snapshot = ImageSnapshot(group, name, step, png, tuple(captions[0] if captions else ()))
            self.images[(group, name)] = snapshot
            history = self.image_history.setdefault((group, name), deque(maxlen=IMAGE_HISTORY))
            history.append(snapshot)
            self.images_logged[(group, name)] = self.images_logged.get((group, name), 0) + 1
            self.changed_images.add((group, name))
        self.extras.apply(update.extras)
        if update.meta is not None:
            self.meta = update.meta
            self.status_changed = True
        if update.status is not None:
            self.status = update.status
            self.eta.observe(update.status)
            self.status_changed = True
        if not update:
            return False
        self.version += 1
        return True

    @property
    def has_data(self) -> bool:
        """Whether anything was read: a point, an image, the meta or status document."""
        return bool(self.series or self.images or self.meta is not None or self.status is not None)

    @property
    def points(self) -> int:
        """Scalar points held."""
        return sum(len(s) for s in self.series.values())

    @property
    def last_step(self) -> int | None:
        """Highest step of any series."""
        steps = [s.last_step for s in self.series.values() if s.last_step is not None]
        return max(steps) if steps else None
