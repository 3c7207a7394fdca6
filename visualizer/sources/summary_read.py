"""One store's documents and summary, read on a pool thread for the catalog.

A store is known by its ``status.pickle``, which repeats the name and options of its
``meta.pickle``; a store whose status does not (written before it did) is known by
both. A store written before summaries (its status keeps none) is read whole, a page
at a time, and its summary computed from its series.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import (
    MAX_DOCUMENT_BYTES,
    PAGE_BYTES,
    LocalSource,
    Source,
    StoreReader,
)
from visualizer.model.rundata import RunData
from visualizer.model.summary import RunSummary, from_documents, from_run

log = logging.getLogger(__name__)


@dataclass
class Read:
    """What one read of a store found (on a pool thread)."""

    meta: dict[str, Any] | None = None
    status: dict[str, Any] | None = None
    summary: RunSummary | None = None  # computed from the series: a store without one
    version: object = None  # status.pickle's version when read
    error: str | None = None


def _document(source: Source, name: str) -> dict[str, Any] | None:
    """A document of the store; None when absent or unreadable (S3 failures raise)."""
    try:
        data = source.read(name, 0, MAX_DOCUMENT_BYTES)
    except OSError:
        return None  # not written yet
    try:
        return fmt.decode_document(data, source.describe(name))
    except fmt.OverBudgetError:
        raise  # values no reader can take: the whole store is unreadable, said once
    except fmt.StoreError as err:  # corrupt or hostile: its series may still be read
        log.warning("%s", err)
        return None


def meta_in(status: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of meta.pickle a status repeats (``fmt.RUN_FIELDS``: the run's name and
    options); None where it does not, or not as a writer writes them."""
    if not isinstance(status, dict):
        return None
    name, options = (status.get(key) for key in fmt.RUN_FIELDS)
    if not isinstance(name, str) or not isinstance(options, dict):
        return None
    return dict(zip(fmt.RUN_FIELDS, (name, options), strict=True))


def status_version(source: Source) -> object:
    """A local store's status.pickle version, None where it has none: its mtime and size in
    one int (``mtime_ns << 64 | size``; a tuple of two held 80 bytes more a run: 8 MB of
    100,000 runs the catalog knows)."""
    if not isinstance(source, LocalSource):
        return None
    try:  # a string path: joining Paths cost more than the stat, 10,000 runs over
        st = os.stat(source.describe(fmt.STATUS_FILE))  # noqa: PTH116
    except OSError:
        return None
    return st.st_mtime_ns << 64 | st.st_size


class _QuietReader(StoreReader):
    """A reader for a summary: a bad file is told of once the run is followed, not here too."""

    def _warn(self, message: str) -> None:
        log.debug("%s", message)
        self.warnings.append(message)


def read_summary(
    source: Source,
    meta: dict[str, Any] | None = None,
    whole: bool = True,
    stopped: Callable[[], bool] = bool,
) -> Read:
    """The documents of a store and its summary (the one function that reads it, for the
    viewer's catalog, the Api and the export): the one its status keeps, else, when
    ``whole``, one computed from its series (``stopped``, asked between pages, cuts that
    short). Meta comes from status where it repeats it, else ``meta`` when already known,
    else meta.pickle. Run on a pool thread: the follow loop only takes it."""
    version = status_version(source)
    status = _document(source, fmt.STATUS_FILE)
    meta = meta_in(status) or meta or _document(source, fmt.META_FILE)
    read = Read(meta=meta, status=status, version=version)
    if not whole or (read.status is not None and "series" in read.status):
        read.summary = from_documents("", read.meta, read.status)
        return read
    data = RunData("")
    reader = _QuietReader(source)
    data.apply(reader.poll(max_bytes=PAGE_BYTES))
    while reader.more and not stopped():
        data.apply(reader.poll(max_bytes=PAGE_BYTES))
    read.summary = from_run(data)
    read.meta = read.meta if read.meta is not None else data.meta
    return read
