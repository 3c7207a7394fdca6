"""Finding the runs under ``--pickle_dir``: one store, a run dir, or a directory of runs.

A run is named by its metadata (the ``name`` in ``meta.pickle``), so a run
copied or downloaded anywhere reads as the same run; the directory's name is
the fallback for a store without usable metadata.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import MAX_DOCUMENT_BYTES, LocalSource, Source
from visualizer.layout import safe_id

from .s3 import S3ReadError, is_s3_url
from .store_folders import folder_stamp, has_documents, is_store, leaves, subfolders

if TYPE_CHECKING:
    from .s3_runs import S3Runs

log = logging.getLogger(__name__)

# Longer stored names are not names a trainer wrote: the directory's is used.
MAX_NAME_CHARS = 200
SETTLED_NS = 2_000_000_000  # a root changed this long ago is listed again once it changes


@dataclass(frozen=True, slots=True)
class RunSpec:
    """A run found under the root: its display name and where its store is."""

    name: str
    source: Source
    remote: bool  # polled with back-off (S3) rather than woken by file events


def stored_name(source: Source) -> str | None:
    """The run's name as its metadata records it; None without usable metadata.

    S3 errors (:class:`~visualizer.sources.s3.S3ReadError`) propagate: they are the
    cause to report, not a run without a name.
    """
    try:
        data = source.read(fmt.META_FILE, 0, MAX_DOCUMENT_BYTES)
        meta = fmt.decode_document(data, source.describe(fmt.META_FILE))
    except (OSError, fmt.StoreError):  # absent (yet), unreadable, or not ours
        return None
    return name_in(meta)


def name_in(meta: Any) -> str | None:
    """The run name a ``meta.pickle`` document records, if it is a usable one."""
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(name, str) and name.strip() and len(name) <= MAX_NAME_CHARS:
        return name if name.isprintable() else None
    return None


@dataclass(frozen=True, slots=True)
class Found:
    """A store found under the root, not named yet: ``key`` tells it from the others."""

    key: str
    folder: str  # its folder's name: the run's name when its metadata names none
    source: Source
    remote: bool


class RunNames:
    """The runs found under one root, each named once and uniquely."""

    def __init__(self) -> None:
        self.multi = False  # True once the root turned out to be a directory of runs
        self._specs: dict[str, RunSpec] = {}
        self._taken: set[str] = set()  # the names given
        self._found: dict[str, Found] = {}  # every store found, by key: never looked at again

    def found(self) -> list[Found]:
        """The stores there now, in key order, named or not (subclasses list them)."""
        raise NotImplementedError

    def discover(self) -> list[RunSpec]:
        """The runs there now, a new one named by its metadata (read here, one at a time)."""
        return [
            self._specs.get(found.key) or self.name(found, self._stored_name(found))
            for found in self.found()
        ]

    def _stored_name(self, found: Found) -> str | None:
        """The name ``found``'s metadata records. One run of many that S3 will not give
        (a bucket policy denying its prefix) is named after its folder: the root was
        listed, so the others are readable, and reading the run tells what failed."""
        try:
            return stored_name(found.source)
        except S3ReadError:
            if not self.multi:
                raise
            return None

    def name(self, found: Found, stored: str | None) -> RunSpec:
        """The spec of the store ``found``: named ``stored`` (its metadata's name), else after
        its folder. Two copies of one run under a root keep apart: the later named, as its folder.
        """
        spec = self._specs.get(found.key)
        if spec is None:
            name = stored if stored and stored not in self._taken else self._free(found.folder)
            spec = self._specs[found.key] = RunSpec(name, found.source, found.remote)
            self._taken.add(name)
        return spec

    def _free(self, folder: str) -> str:
        """A name no run has: ``folder``, else ``folder-2``, ``folder-3``..."""
        numbered = (f"{folder}-{i}" for i in itertools.count(2))
        return next(c for c in itertools.chain((folder,), numbered) if c and c not in self._taken)

    def _known(self, key: str, make: Callable[[], Found]) -> Found:
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = make()
        return found


class LocalRuns(RunNames):
    """Runs under a local directory, re-scanned on every call so later runs are picked up.

    ``root`` may be a store (``<name>/pickle``, or a SummaryWriter log dir), a run
    dir holding ``pickle/``, or a directory of runs, each ``<name>/pickle`` or a
    store itself.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__()
        self.root = Path(root)
        self._by_folder: dict[str, Found] = {}  # each run folder's store, by the folder's name
        self._outside: set[str] = set()  # links out of the root, told of once
        self._listed: tuple[tuple[int, int, int] | None, list[Found]] = (None, [])  # stat, stores

    def __str__(self) -> str:
        return str(self.root)

    def waiting_for(self) -> str:
        """What is missing, for the 'waiting' message."""
        if not self.root.exists():
            return f"{self.root} to appear (no snapshot store there yet)"
        return f"a run in {self.root} (a store: {self.root}/<name>/pickle/meta.pickle)"

    def found(self) -> list[Found]:
        """The stores there now, in folder order; a folder seen before is not looked into again
        (10,000 runs cost one directory listing, not 10,000)."""
        root = self.root
        if not self.multi:  # a directory of runs does not turn into a store
            if is_store(root):
                return [self._store(root.parent.name if root.name == "pickle" else root.name, root)]
            if is_store(root / "pickle"):
                return [self._store(root.name, root / "pickle")]
        stamp = folder_stamp(root)
        if stamp is not None and stamp == self._listed[0]:
            return list(self._listed[1])  # no folder came or went: 100,000 not listed again
        found, real_root, unsettled = [], os.path.realpath(root), False  # unsettled: a non-store
        for child in subfolders(root):
            known = self._by_folder.get(name := child.rsplit(os.sep, 1)[-1])  # Found's string
            if known is None:
                known = self._look_into(child, name, real_root)
                if known is None:
                    unsettled = True  # its store may appear: listed again
                    continue
                self._by_folder[name] = known
            found.append(known)
        if found:
            self.multi = True
        settled = stamp is not None and time.time_ns() - stamp[0] > SETTLED_NS  # its tick past
        self._listed = (stamp if settled and not unsettled else None, found)
        return list(found)

    def _look_into(self, child: str, name: str, real_root: str) -> Found | None:
        """The store in folder ``child`` (``child/pickle`` or ``child`` itself, named ``name``),
        if any; none through a symlink that leads out of the root (told once)."""
        store = f"{child}{os.sep}pickle"
        for path in (child, store):
            if leaves(real_root, path):
                if path not in self._outside:
                    self._outside.add(path)
                    log.warning(
                        "skipped %s: a symlink to %s, outside %s; copy the run in, or "
                        "point --pickle-dir at it",
                        path, os.path.realpath(path), self.root,
                    )  # fmt: skip
                return None
        if has_documents(store) or is_store(Path(store)):
            return self._store(name, store)
        return self._store(name, child) if is_store(Path(child)) else None

    def _store(self, folder: str, store: str | Path) -> Found:
        key = str(store)
        return self._known(key, lambda: Found(key, folder or "run", LocalSource(store), False))

    def run_folder(self, path: str) -> str | None:
        """The key of the store a changed file ``path`` belongs to, if it is a known one."""
        try:
            parts = Path(path).relative_to(self.root).parts
        except ValueError:
            return None
        if not self.multi or not parts:
            return next(iter(self._found), None)
        for key in (str(self.root / parts[0] / "pickle"), str(self.root / parts[0])):
            if key in self._found:
                return key
        return None


def locate(location: str, s3_client: Any = None) -> LocalRuns | S3Runs:
    """The run finder for ``location``, the ``--pickle-dir`` value: a store, a run dir or a
    directory of runs, as a path or an ``s3://`` URL."""
    if is_s3_url(location):
        from .s3_runs import S3Runs  # it builds on this module's RunNames

        try:
            return S3Runs(location, s3_client)
        except ImportError as err:
            raise ValueError(
                f"reading {location} needs boto3 ({err}); install it: "
                "pip install 'remote-train-monitor[s3]'"
            ) from None
    return LocalRuns(Path(location).expanduser())


def env_name(run: str, prefix: str | None, multi: bool) -> str:
    """visdom env of a run: the run's name, or ``--env`` (a prefix when there are many runs)."""
    if prefix and multi:
        return safe_id(f"{prefix}_{run}")
    return safe_id(prefix or run)
