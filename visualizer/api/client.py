"""``Api()``: W&B's read API over snapshot stores, offline (a path or an ``s3://`` prefix).

Listing reads only each run's ``status.pickle`` (its summary, and its
``meta.pickle``'s name and options repeated; that too for a store written before
status repeated them), with the catalog's reader (what the viewer's runs table
reads); a store written before summaries is read whole once. A run's points are
read only when asked for (:meth:`.ApiRun.history`).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

from visualizer.model.summary import RunSummary
from visualizer.sources.catalog import Read, read_error
from visualizer.sources.runs import Found, LocalRuns, locate, name_in
from visualizer.sources.s3 import FETCHES_AT_ONCE, S3ReadError
from visualizer.sources.s3_runs import S3Runs
from visualizer.sources.summary_read import read_summary, status_version

from .filters import Fields, compile_filters, ordered
from .read_pool import Pooled, Workers, read_pooled, workers_for
from .run import ApiRun, Documents
from .summary_cache import SummaryCache, lazily

log = logging.getLogger(__name__)


def _read(found: Found) -> Read:
    """One store's documents and summary; a store that can not be read says why, once."""
    try:
        return read_summary(found.source)
    except S3ReadError as err:
        if not err.one_run:
            raise  # the bucket's failure (credentials, no endpoint): the cause to report
        why = str(err)  # a policy denying this run's prefix: the others go on
    except Exception as err:  # a hostile or broken store: the others go on
        why = read_error(err)
    log.warning("run %s: can not read %s (%s)", found.folder, found.source.describe(""), why)
    return Read(summary=RunSummary(found.folder, state="unreadable", error=why))


def read_runs(root: str, s3_client: Any = None) -> list[ApiRun]:
    """Every run at ``root`` (a path or an ``s3://`` URL), from its documents: those of a run
    whose status did not change since the last listing from the cache (:mod:`.summary_cache`).

    FileNotFoundError (one line) when there is none; S3ReadError when S3 fails.
    """
    runs = locate(str(root), s3_client)
    found = runs.found()
    if not found:
        raise FileNotFoundError(f"no snapshot store found: expected {runs.waiting_for()}")
    cache = SummaryCache(str(root))
    # Started while the runs not in the cache are found: many are read by workers.
    many = 0 if isinstance(runs, S3Runs) else len(found) - len(cache.old)
    with workers_for(many) as workers, _cycles_collected_after():
        versions = _versions(runs, found, cache)
        kept = [cache.get(f.key, version) for f, version in zip(found, versions, strict=True)]
        unread = [f for f, entry in zip(found, kept, strict=True) if entry is None]
        reads = _reads(unread, workers)
        listed = []
        for store, version, entry in zip(found, versions, kept, strict=True):
            if entry is None:
                read = next(reads)
                if isinstance(read, tuple):  # a worker's (version, name, text)
                    entry = cache.keep(store.key, *read)
                elif (entry := cache.put(store.key, read.version or version, read)) is None:
                    assert read.summary is not None  # held as read: read_summary made one
                    spec = runs.name(store, name_in(read.meta))
                    listed.append(ApiRun(spec.name, store.source, read.summary, read.meta))
                    continue
            spec = runs.name(store, entry.name)
            load = lazily(entry.text, partial(_documents, store))
            listed.append(ApiRun.lazily(spec.name, store.source, load))
    cache.save()
    return listed


def _reads(unread: list[Found], workers: Workers) -> Iterator[Read | Pooled]:
    """Each of ``unread``'s documents, in order: read (S3: many requests at once), or the
    text one of ``workers`` gave (:mod:`.read_pool`: many local runs)."""
    if any(f.remote for f in unread):  # requests wait on the network: many at once
        with ThreadPoolExecutor(FETCHES_AT_ONCE, thread_name_prefix="api-runs") as pool:
            reads = list(pool.map(_read, unread))
        yield from reads
        return
    # Decoding is Python: many runs in worker processes, the others on this thread
    # (threads handing 10,000 small reads over to this one cost a third more CPU).
    pooled = read_pooled([f.source.describe("") for f in unread], workers)
    for store, done in zip(unread, pooled, strict=True):
        yield _read(store) if done is None else done


def _versions(runs: LocalRuns | S3Runs, found: list[Found], cache: SummaryCache) -> list[object]:
    """Each store's status version: the ETag of one listing (S3), or its size and mtime where
    the cache keeps the store (a stat each; a local store read now is known by the version
    its read gives, taken before its documents are: none is taken twice)."""
    if isinstance(runs, S3Runs):
        etags = runs.status_versions() if len(found) > 1 else {}
        return [etags.get(f.key) for f in found]
    return [status_version(f.source) if f.key in cache.old else None for f in found]


def _documents(found: Found) -> Documents:
    """``found``'s summary and meta, read now (its cache entry did not decode)."""
    read = _read(found)
    assert read.summary is not None
    return read.summary, read.meta


@contextmanager
def _cycles_collected_after() -> Iterator[None]:
    """Pause Python's cycle collector inside the block (if it was on, as it comes back after).

    10,000 runs' documents are some million dicts and lists, none in a cycle; the collector,
    run again and again over the growing heap as they are made, took a tenth to a fifth of
    the listing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _FieldsOf(Sequence[Fields]):
    """Each run's fields (:meth:`.ApiRun.fields`), made when looked at: 100,000 runs' held at
    once would be most of the memory of listing them."""

    def __init__(self, runs: list[ApiRun]) -> None:
        self.runs = runs

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [run.fields() for run in self.runs[index]]
        return self.runs[index].fields()


class Api:
    """``wandb.Api()`` for runs on disk or in S3: :meth:`runs` and :meth:`run`.

    ``s3_client``: a boto3 client for ``s3://`` paths (default: one from the environment,
    as the viewer makes it).
    """

    def __init__(self, s3_client: Any = None) -> None:
        self.s3_client = s3_client

    def runs(
        self,
        path: str,
        filters: Mapping[str, Any] | str | None = None,
        order: str | None = None,
    ) -> list[ApiRun]:
        """The runs at ``path`` (a store, a directory of runs or an ``s3://`` prefix) that
        ``filters`` keeps (a dict, or the runs table's text: see :mod:`visualizer.api.filters`),
        in name order of their folders, or in ``order`` (``"+config.lr"``, ``"-summary.loss"``).

        ValueError for a filter or order it can not take, FileNotFoundError for a path with no run.
        """
        keep = compile_filters(filters)  # refused before anything is read
        ordered([], [], order)  # an order it can not take too
        runs = read_runs(path, self.s3_client)
        if filters is None and order is None:
            return runs  # each run's documents decoded only when asked for
        kept = runs if filters is None else [run for run in runs if keep(run.fields())]
        return ordered(kept, _FieldsOf(kept), order)

    def run(self, path: str) -> ApiRun:
        """The one run at ``path`` (its store or its run directory); ValueError when ``path``
        holds several runs (name one: ``path/<name>``)."""
        runs = read_runs(path, self.s3_client)
        if len(runs) != 1:
            names = ", ".join(run.name for run in runs[:3])
            raise ValueError(
                f"{path} holds {len(runs)} runs ({names}{', ...' if len(runs) > 3 else ''}): "
                "use Api().runs(path), or Api().run(path/<name>) for one of them"
            )
        return runs[0]
