"""The Api's cache of run documents: a run whose ``status.pickle`` did not change since the
last listing is not read again.

One file per listed location in the user's cache directory
(``~/.cache/remote-train-monitor/api-summaries/<digest>.jsonl``, see :mod:`visualizer.userdirs`),
JSON lines: a header naming the format and the location, then a line a run::

    ["<store key>", <status version>, "<name its meta gives>" or null]<TAB>[<status>, <meta or null>]

The version is the status' mtime and size (local, in one int) or its ETag and size (S3); a run whose
version differs is read again. The documents are kept as text and decoded when a run's
config or summary is first asked for, by the same reader a fresh read goes through
(:func:`~visualizer.model.summary.from_documents`): 100,000 runs listed hold 100,000 short
texts, not a million dicts. A cache file is input like any other: one over
:data:`MAX_CACHE_BYTES`, with another header or unreadable is ignored (and rewritten); a line
that does not decode is a run read again. Only documents JSON gives back as they were
(no bytes, tuples or non-text keys) are kept; the others are read on every listing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from snapshot_store.format.pickle_guard import MAX_DEPTH
from visualizer.model.summary import from_documents
from visualizer.sources.runs import name_in
from visualizer.sources.summary_read import Read, meta_in
from visualizer.userdirs import user_cache_dir, write_atomically

from .run import Documents

log = logging.getLogger(__name__)

CACHE_FOLDER = "api-summaries"
FORMAT = "remote-train-monitor api summaries 2"  # 2: a local version is one int
MAX_CACHE_BYTES = 1 << 30  # a bigger file is not read (100,000 runs took about 80 MB)
MAX_LINE_CHARS = 1 << 20  # a run's line; a status is some hundred bytes to 100 kB


class CachedRun(NamedTuple):
    """One run as the cache keeps it: its status version, its name, its documents' text."""

    version: object
    name: str | None
    text: str


def cache_file(location: str) -> Path:
    """The cache file of the runs at ``location`` (a directory or an ``s3://`` URL)."""
    digest = hashlib.sha256(location.encode()).hexdigest()[:16]
    return user_cache_dir() / CACHE_FOLDER / f"{digest}.jsonl"


def encoded(read: Read) -> str | None:
    """``read``'s documents as the cache keeps them; None for a read not to keep (no summary
    in its status, or documents that JSON would not give back as they are)."""
    status = read.status
    if read.error is not None or not isinstance(status, dict) or "series" not in status:
        return None
    documents = [status, None if meta_in(status) is not None else read.meta]
    try:
        text = _encode(documents)
    except (TypeError, ValueError, RecursionError):  # bytes, sets, cycles, too deep
        return None
    return text if len(text) <= MAX_LINE_CHARS and _as_json_gives(documents) else None


_encode = json.JSONEncoder(separators=(",", ":")).encode
_JSON_LEAVES = frozenset((str, int, float, bool, type(None)))
_TEXT_KEYS = {str}


def _as_json_gives(documents: list[Any]) -> bool:
    """Whether JSON gives ``documents`` back as they are: only dicts with text keys, lists,
    text, numbers (NaN too), booleans and None; a tuple or an int key would come back
    changed. A walk a level at a time (a round trip through json.loads and a compare took
    half the first listing's decoding)."""
    level: list[Any] = documents
    for _ in range(MAX_DEPTH + 2):
        if not level:
            return True
        inner: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                if value and set(map(type, value)) != _TEXT_KEYS:
                    return False
                inner += value.values()
            elif kind is list:
                inner += value
            elif kind not in _JSON_LEAVES:
                return False
        level = inner
    return False  # deeper than any budgeted document


def decoded(text: str) -> Documents:
    """The summary and meta ``text`` (:func:`encoded`) holds; ValueError when it holds none."""
    try:
        documents = json.loads(text)
    except RecursionError as err:
        raise ValueError("nested too deep") from err
    if not isinstance(documents, list) or len(documents) != 2:
        raise ValueError("not [status, meta]")
    status, meta = documents
    if not isinstance(status, dict) or not (meta is None or isinstance(meta, dict)):
        raise ValueError("not [status, meta]")
    meta = meta_in(status) or meta
    return from_documents("", meta, status), meta


class SummaryCache:
    """The cached documents of one location's runs (see the module), and those read now."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.path = cache_file(location)
        self.old = self._load()
        self.new: dict[str, CachedRun] = {}

    def _load(self) -> dict[str, CachedRun]:
        """The file's runs by key; nothing when it is absent, too big or not this cache's."""
        runs: dict[str, CachedRun] = {}
        try:
            if self.path.stat().st_size > MAX_CACHE_BYTES:
                log.warning("%s: over %d bytes, not read", self.path, MAX_CACHE_BYTES)
                return runs
            with self.path.open(encoding="utf-8", newline="\n") as file:
                if file.readline(MAX_LINE_CHARS).rstrip("\n") != self._header():
                    return runs
                for line in iter(lambda: file.readline(MAX_LINE_CHARS), ""):
                    if not line.endswith("\n"):  # longer than a line may be (or cut short)
                        _skip_line(file)
                        continue
                    _add_entry(runs, line[:-1])
        except (OSError, UnicodeDecodeError):
            return {}
        return runs

    def _header(self) -> str:
        return json.dumps({"format": FORMAT, "location": self.location})

    def get(self, key: str, version: object) -> CachedRun | None:
        """What is kept for ``key`` at ``version``, None when not kept at that version."""
        kept = self.old.get(key)
        if version is None or kept is None or kept.version != version:
            return None
        if kept.text[:2] != "[{" or kept.text[-1:] != "]":  # cut short or not [status, meta]
            return None
        self.new[key] = kept
        return kept

    def put(self, key: str, version: object, read: Read) -> CachedRun | None:
        """Keep ``read`` for ``key`` at ``version`` (:meth:`keep`); None when it is not one to
        keep (:func:`encoded`)."""
        text = encoded(read)
        return None if text is None else self.keep(key, version, name_in(read.meta), text)

    def keep(self, key: str, version: object, name: str | None, text: str) -> CachedRun:
        """The run named ``name`` whose documents are ``text`` (:func:`encoded`), kept for
        ``key`` at ``version`` (not kept where there is no version)."""
        entry = CachedRun(version, name, text)
        if version is not None:
            self.new[key] = entry
        return entry

    def save(self) -> None:
        """Write the runs kept by this listing, when they are not what the file holds; a cache
        that can not be written is only logged."""
        if self.new == self.old:
            return
        try:
            write_atomically(self.path, self._lines())
        except OSError as err:
            log.warning("can not write the runs cache %s (%s): runs are read again", self.path, err)

    def _lines(self) -> Iterator[bytes]:
        """The file's lines (see the module), each ending in a newline."""
        yield f"{self._header()}\n".encode()
        for key, entry in self.new.items():  # as listed (sorting 100,000 paths took 0.3 s)
            head = _encode([key, entry.version, entry.name])
            yield f"{head}\t{entry.text}\n".encode()


def _skip_line(file: TextIO) -> None:
    """Read past the rest of the line ``file`` is in."""
    while (rest := file.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
        pass


def _add_entry(runs: dict[str, CachedRun], line: str) -> None:
    """The run ``line`` keeps, into ``runs``; a line that does not decode is left out (that
    run is read again)."""
    head, tab, text = line.partition("\t")
    try:
        key, version, name = json.loads(head)
    except (ValueError, TypeError, RecursionError):
        return
    if tab and isinstance(key, str) and isinstance(name, str | None):
        runs[key] = CachedRun(version, name, text)


def lazily(text: str, read_again: Callable[[], Documents]) -> Callable[[], Documents]:
    """A loader of ``text``'s documents; a text that does not decode (the file was changed
    between listing and asking) reads the run again."""

    def load() -> Documents:
        try:
            return decoded(text)
        except ValueError as err:
            log.warning("runs cache: a run's entry does not decode (%s): reading it again", err)
            return read_again()

    return load
