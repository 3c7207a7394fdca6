"""The artifacts a run logged and used, as W&B's public ``Artifact`` gives them.

An :class:`ApiArtifact` has W&B's attribute names: ``name`` (``<name>:v<N>``), ``type``,
``version``, ``aliases``, ``metadata``, ``digest``, ``size``, ``description``,
``files()`` and ``download(root)``. Versions are not stored: they are counted per artifact
name across the runs of the run's directory of runs, in the order they were logged
(:func:`snapshot_store.format.artifacts.versions`). A file's bytes are read where the
record says they lie (``stored``, relative to the logging run's dir), never outside it;
a trainer checkpoint since overwritten by a later save (``latest.pth``) is named as gone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapshot_store.format import artifacts as fmt
from snapshot_store.format.frames import EXTRAS, parse_segment_name
from snapshot_store.format.kinds import ExtraRecord
from snapshot_store.read.store_reader import Source, read_store
from visualizer.sources.runs import locate

# A logged record with the run it came from: (run folder, run dir or None, record).
Logged = tuple[str, Path | None, ExtraRecord]


@dataclass(frozen=True)
class ArtifactFile:
    """One file of an artifact (W&B's manifest entry): its ``name`` in the artifact, ``size``,
    ``digest`` (base64 MD5) and where its bytes are (``local_path``: None when not here)."""

    name: str
    size: int
    digest: str
    local_path: Path | None
    missing: str = ""  # why the bytes are not readable here, when they are not

    @property
    def md5(self) -> str:
        """W&B's ``File.md5``: the base64 MD5 of its bytes."""
        return self.digest

    def download(self, root: str | os.PathLike[str] = ".") -> str:
        """Copy the file to ``root``/``name``; its path. FileNotFoundError naming why not."""
        if self.local_path is None or not self.local_path.is_file():
            raise FileNotFoundError(f"{self.name}: {self.missing or 'its file is gone'}")
        target = Path(root) / self.name
        if not target.resolve().is_relative_to(Path(root).resolve()):
            raise ValueError(f"{self.name!r}: a file's name leaves {root}; not written")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.local_path, target)
        return str(target)


@dataclass
class ApiArtifact:
    """One version of an artifact (see the module); ``run``: the folder of the run that logged it."""

    base_name: str
    version: str
    type: str
    digest: str
    run: str
    step: int
    created_at: float
    aliases: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    entries: list[ArtifactFile] = field(default_factory=list)

    @property
    def name(self) -> str:
        """W&B's ``<name>:v<N>``."""
        return f"{self.base_name}:{self.version}"

    @property
    def qualified_name(self) -> str:
        return self.name

    @property
    def size(self) -> int:
        """Bytes of its files together."""
        return sum(entry.size for entry in self.entries)

    def files(self) -> list[ArtifactFile]:
        """Its files, as its manifest lists them."""
        return list(self.entries)

    def logged_by(self) -> str:
        """The run that logged it (its folder name; W&B gives the run)."""
        return self.run

    def download(self, root: str | os.PathLike[str] | None = None) -> str:
        """Copy its files into ``root`` (W&B's default ``./artifacts/<name>:v<N>``); the dir."""
        where = Path(root) if root is not None else Path("artifacts") / self.name
        for entry in self.entries:
            entry.download(where)
        return str(where)

    def __repr__(self) -> str:
        return f"<Artifact {self.name} ({self.type})>"


def run_dir_of(store: str) -> Path | None:
    """The run dir a local store's ``stored`` paths are relative to (None for S3)."""
    if store.startswith("s3://"):
        return None
    path = Path(store)
    return path.parent if path.name == "pickle" else path


def _of_kind(extras: Iterable[ExtraRecord], kind: str) -> list[ExtraRecord]:
    return [record for record in extras if record[0] == kind]


class _ExtrasOnly:
    """A store's source listing its documents and extras segments only: a neighbour's
    artifacts are read without its points and images."""

    def __init__(self, source: Source) -> None:
        self._source = source

    def describe(self, name: str) -> str:
        return self._source.describe(name)

    def list(self) -> dict[str, tuple]:
        listing = self._source.list()
        return {
            n: v for n, v in listing.items() if (parse_segment_name(n) or (EXTRAS,))[0] == EXTRAS
        }

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        return self._source.read(name, offset, length)


def _runs_logged(run_dir: Path | None, own: list[Logged]) -> list[Logged]:
    """Every ``artifact`` record of the runs beside ``run_dir`` (its own given), by wall time."""
    return runs_logged(None if run_dir is None else run_dir.parent, own, run_dir)


def runs_logged(
    runs_dir: Path | None, own: list[Logged], run_dir: Path | None = None
) -> list[Logged]:
    """Every ``artifact`` record of the runs in ``runs_dir`` (those of ``run_dir`` given as
    ``own``, not read), by wall time."""
    logged = list(own)
    if runs_dir is not None and runs_dir.is_dir():
        for found in locate(str(runs_dir)).found():
            other = run_dir_of(found.source.describe(""))
            if other is None or other == run_dir:
                continue
            try:
                extras = read_store(_ExtrasOnly(found.source))[2].extras
            except Exception:  # a broken neighbour: its artifacts are not counted
                continue
            logged += [(found.folder, other, r) for r in _of_kind(extras, "artifact")]
    return sorted(logged, key=lambda item: item[2][3])


def _file(run_dir: Path | None, entry: dict[str, Any], live: set[str]) -> ArtifactFile:
    """An entry of a record, its bytes looked for under ``run_dir`` (never outside it)."""
    stored, name = str(entry["stored"]), str(entry["path"])
    if run_dir is None:
        return ArtifactFile(name, entry["size"], entry["digest"], None, "its run is not local")
    path = (run_dir / stored).resolve()
    if not path.is_relative_to(run_dir.resolve()):
        return ArtifactFile(name, entry["size"], entry["digest"], None, f"{stored} leaves the run")
    if stored not in live:
        why = f"{stored} was overwritten by a later checkpoint"
        return ArtifactFile(name, entry["size"], entry["digest"], None, why)
    return ArtifactFile(name, entry["size"], entry["digest"], path)


def artifact_versions(logged: list[Logged]) -> list[ApiArtifact]:
    """One :class:`ApiArtifact` a version of each name in ``logged`` (ordered by wall time)."""
    numbered = fmt.versions([(run, record) for run, _dir, record in logged])
    # The newest record of a stored path holds its bytes: the older ones were overwritten.
    owner: dict[tuple[str, str], int] = {}
    for index, (run, _dir, record) in enumerate(logged):
        for entry in record[4]["files"]:
            owner[(run, entry["stored"])] = index
    out: dict[tuple[str, str], ApiArtifact] = {}
    for index, ((run, run_dir, record), (version, aliases)) in enumerate(
        zip(logged, numbered, strict=True)
    ):
        _kind, _tag, step, wall, data = record
        key = (data["name"], version)
        live = {e["stored"] for e in data["files"] if owner[(run, e["stored"])] == index}
        files = [_file(run_dir, entry, live) for entry in data["files"]]
        if key in out:  # the same contents again: its files where they still are
            known = out[key]
            known.entries = [
                new if old.local_path is None else old
                for old, new in zip(known.entries, files, strict=False)
            ]
            known.aliases = aliases
            continue
        out[key] = ApiArtifact(
            data["name"], version, data["type"], data["digest"], run, step, wall, aliases,
            dict(data["metadata"]), data["description"], files,
        )  # fmt: skip
    return list(out.values())


def logged_artifacts(store: str, folder: str, extras: list[ExtraRecord]) -> list[ApiArtifact]:
    """The versions run ``folder`` (its store at ``store``) logged, in logged order."""
    run_dir = run_dir_of(store)
    own = [(folder, run_dir, r) for r in _of_kind(extras, "artifact")]
    every = artifact_versions(_runs_logged(run_dir, own))
    return [artifact for artifact in every if artifact.run == folder]


def used_artifacts(store: str, extras: list[ExtraRecord]) -> list[ApiArtifact]:
    """The artifacts the run used, each the version its digest names (when still known)."""
    run_dir = run_dir_of(store)
    uses = _of_kind(extras, "artifact_use")
    if not uses:
        return []
    folder = run_dir.name if run_dir is not None else ""
    own = [(folder, run_dir, r) for r in _of_kind(extras, "artifact")]
    every = artifact_versions(_runs_logged(run_dir, own))
    by_digest = {(a.base_name, a.digest): a for a in every}
    used = []
    for _kind, _tag, step, wall, data in uses:
        known = by_digest.get((data["name"], data["digest"]))
        if known is None:  # its run is gone or elsewhere: what the use record says
            version = data["version"] or "v?"
            known = ApiArtifact(data["name"], version, "", data["digest"], data["run"], step, wall)
        used.append(known)
    return used
