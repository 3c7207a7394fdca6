"""Runs under an S3 prefix, found by listings paced to what the bucket's owner pays.

A prefix of runs is listed with a delimiter (a request per 1,000 runs) for its ``<name>/``
folders, each a run with its store in ``<name>/pickle/``. Up to 1,000 runs that is one
request, made at each discovery (every 8 s: the follower's pace). Past 1,000 runs:

* each discovery lists what comes after the last run folder known: one request, which finds
  the runs named later in order (a counter, a date) within seconds;
* the folders are walked a page a minute (:data:`PAGE_GAP_S`), from where the page before
  ended: a run named before the others shows within a minute per 1,000 runs; while a page
  shows the runs table (:attr:`S3Runs.watched`), a page at each discovery: within 8 s per
  1,000 runs, for 7.5 requests a minute more while a person looks;
* the catalog walks every object the same way for each run's ``status.pickle`` version
  (:meth:`S3Runs.status_page`): a finished run resumed shows within a minute per 1,000 objects.

So an idle bucket of any size costs under 10 requests a minute (7.5 of them the listing after
the last run), where listing 10,000 runs whole every minute and every object every 5 minutes
cost 26.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from snapshot_store.format import frames as fmt
from transfer_plugins.s3_location import S3Location

from .runs import Found, RunNames, RunSpec
from .s3 import S3Source, list_page, list_pages, make_read_client

PAGE_GAP_S = 60.0  # between two pages of a walk through a prefix past 1,000 runs


@dataclass(slots=True)
class Walk:
    """A listing taken a page at a time: where its next page starts and when it is due."""

    after: str = ""  # the last key of the page before; "" for the prefix's start
    last: float = -math.inf  # monotonic time of the page before

    def start(self, now: float, gap: float | None = None) -> dict[str, str] | None:
        """The next page's ``StartAfter`` (``{}``: the prefix's start) once ``gap`` seconds
        (:data:`PAGE_GAP_S`) have passed since the page before; None until then."""
        if now < self.last + (PAGE_GAP_S if gap is None else gap):
            return None
        self.last = now
        return {"StartAfter": self.after} if self.after else {}

    def went(self, page: dict[str, Any]) -> None:
        """Note where ``page`` ended: the next starts after its last key, or at the start."""
        keys = [obj["Key"] for obj in page["Contents"]]
        keys += [common["Prefix"] for common in page["CommonPrefixes"]]
        self.after = max(keys) if page.get("IsTruncated") and keys else ""


class S3Runs(RunNames):
    """Runs under an S3 prefix: one store (``.../<name>/pickle``) or a prefix of runs.

    :meth:`discover` lists the prefix again at most every ``rediscover_interval`` seconds
    (the follower calls :meth:`found` at its own pace).
    """

    def __init__(self, url: str, client: Any = None, rediscover_interval: float = 60.0) -> None:
        super().__init__()
        self.location = S3Location.parse(url)
        self.client = client if client is not None else make_read_client()
        self.rediscover_interval = rediscover_interval
        self._next_discovery = 0.0
        self._last_folder = ""  # the last run folder in key order, once the prefix was listed
        self._paged = False  # its folders took more than one request: walked, not listed whole
        self._folders = Walk()  # the delimited listing, past 1,000 runs
        self._statuses = Walk()  # every object, for status versions
        self.watched = False  # a page shows the runs table (the follower says): walked faster

    def __str__(self) -> str:
        return str(self.location)

    def waiting_for(self) -> str:
        return f"a snapshot store at {self.location} (or runs at {self.location}<name>/pickle/)"

    def discover(self) -> list[RunSpec]:
        """The runs there, listing the prefix again at most every ``rediscover_interval``."""
        now = time.monotonic()
        if now >= self._next_discovery or self.location.prefix.endswith("pickle/"):
            self._next_discovery = now + self.rediscover_interval
            super().discover()
        return sorted(self._specs.values(), key=lambda spec: spec.name)

    def found(self) -> list[Found]:
        """The stores found by this discovery's listings (see the module's docstring): the
        whole prefix up to 1,000 runs, else what comes after the last run and a walk's page."""
        if self.location.prefix.endswith("pickle/"):
            # The usual single-run URL: the run's own polls tell whether anything is there.
            return [self._store(self.location.run_name, self.location)]
        pages = self._folder_pages()
        names = [
            obj["Key"][len(self.location.prefix) :] for page in pages for obj in page["Contents"]
        ]
        if any(n in (fmt.META_FILE, fmt.STATUS_FILE) or fmt.parse_segment_name(n) for n in names):
            return [self._store(self.location.run_name, self.location)]  # a store itself
        folders = [common["Prefix"] for page in pages for common in page["CommonPrefixes"]]
        self._last_folder = max([self._last_folder, *folders])
        found = []
        for folder in folders:
            name = folder[len(self.location.prefix) :].strip("/")
            if name and not name.startswith("."):
                self.multi = True
                found.append(
                    self._store(name, S3Location(self.location.bucket, f"{folder}pickle/"))
                )
        return found

    def _folder_pages(self) -> list[dict[str, Any]]:
        """This discovery's delimited listing: whole while one request lists every folder; past
        that, one request after the last folder known, and the walk's page when due."""
        now = time.monotonic()
        if not self._paged:
            pages = list(list_pages(self.client, self.location, Delimiter="/"))
            self._paged = len(pages) > 1
            self._folders = Walk(last=now)  # the walk's first page: its gap on
            return pages
        pages = [list_page(self.client, self.location, Delimiter="/", StartAfter=self._last_folder)]
        start = self._folders.start(now, 0.0 if self.watched else None)
        if start is not None:
            pages.append(walked := list_page(self.client, self.location, Delimiter="/", **start))
            self._folders.went(walked)
            self._paged = bool(start or walked.get("IsTruncated"))  # runs deleted: whole again
        return pages

    def status_page(self) -> dict[str, str] | None:
        """The next page of the walk through every object under the prefix, once its minute
        has passed: the ``status.pickle`` versions on it (see :meth:`status_versions`); None
        before. The walk goes through the prefix and begins again, so a finished run
        resumed shows within a minute per 1,000 objects."""
        start = self._statuses.start(time.monotonic())
        if start is None:
            return None
        page = list_page(self.client, self.location, **start)
        self._statuses.went(page)
        return self._versions(page)

    def status_versions(self) -> dict[str, str]:
        """Each store's ``status.pickle`` version (its ETag and size), by key, from one listing
        of every object under the prefix (a request per 1,000 objects)."""
        return {
            key: v
            for page in list_pages(self.client, self.location)
            for key, v in self._versions(page).items()
        }

    def _versions(self, page: dict[str, Any]) -> dict[str, str]:
        """The ``status.pickle`` versions a page of a listing of every object names."""
        suffix = f"/{fmt.STATUS_FILE}"
        versions = {}
        for obj in page["Contents"]:
            key = obj["Key"]
            if key.endswith(suffix):
                store = str(S3Location(self.location.bucket, key[: -len(fmt.STATUS_FILE)]))
                versions[store] = f"{obj.get('ETag')}:{obj.get('Size')}"
        return versions

    def _store(self, folder: str, location: S3Location) -> Found:
        key = str(location)
        return self._known(key, lambda: Found(key, folder, S3Source(location, self.client), True))
