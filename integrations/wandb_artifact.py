"""W&B's ``Artifact``, offline: a named set of files a run logs (``run.log_artifact``,
``wandb.log_model``) and another uses (``run.use_artifact(...).download()``).

At :meth:`Artifact.store` the files are copied, atomically, into the logging run's store
(``<run dir>/pickle/artifacts/<artifact digest>/<path>``), handed to the transfer hook, and
described by an ``artifact`` record (:mod:`snapshot_store.format.artifacts`: W&B's
manifest digests). Versions (``v0``, ``latest``, aliases) are counted when read, across
the runs of the project's folder (:mod:`visualizer.api.artifacts`, imported only when an
artifact is looked up): an artifact used is that reader's :class:`ApiArtifact`.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from run_core.atomic import atomic_file
from run_core.values import plain
from snapshot_store.format import artifacts as fmt

from .wandb_offline import CommError

if TYPE_CHECKING:
    from visualizer.api.artifacts import ApiArtifact, Logged

STORE_DIR = Path("pickle") / "artifacts"  # under the run dir: the files copied at logging
NAME_MAXLEN = 128  # W&B's


class ArtifactNotFoundError(CommError, ValueError):
    """No run of the project logged that version or alias. W&B 0.31 raises ValueError
    (``Artifact ... not found``) or, from its server, CommError: this is both."""


def check_name(name: str) -> str:
    """An artifact name W&B and the versions here accept (no ``/``, no ``:``): ValueError
    naming it otherwise."""
    if not name or len(name) > NAME_MAXLEN or {"/", ":"} & set(name):
        raise ValueError(
            f"artifact name {name!r}: 1 to {NAME_MAXLEN} characters without '/' or ':' "
            "(':' names a version or alias, as in 'name:v0' or 'name:latest')"
        )
    return name


@dataclass(frozen=True)
class ManifestEntry:
    """W&B's manifest entry: ``path`` in the artifact, ``digest`` (base64 MD5), ``size``."""

    path: str
    digest: str
    size: int
    local_path: str


class Manifest:
    """W&B's ``ArtifactManifest``: ``entries`` by path and ``digest()``."""

    def __init__(self, entries: dict[str, ManifestEntry]) -> None:
        self.entries = entries

    def digest(self) -> str:
        """W&B's artifact digest (:func:`~snapshot_store.format.artifacts.manifest_digest`)."""
        return fmt.manifest_digest({"path": e.path, "digest": e.digest} for e in self)

    def __iter__(self) -> Iterator[ManifestEntry]:
        return iter(self.entries.values())


def _entry(path: str, local: Path) -> ManifestEntry:
    with local.open("rb") as handle:
        digest, size = fmt.file_digest(handle)
    return ManifestEntry(path, digest, size, str(local))


class Artifact:
    """W&B's ``wandb.Artifact(name, type, description=None, metadata=None)``."""

    def __init__(
        self,
        name: str,
        type: str,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        **ignored: Any,  # incremental, use_as, storage_region...: W&B's server's
    ) -> None:
        self._name = check_name(name)
        self.type = str(type)
        self.description = description
        self.metadata = dict(metadata or {})
        self.aliases: list[str] = []
        self._files: dict[str, Path] = {}
        self._manifest: Manifest | None = None  # fixed once logged
        self._tmp: tempfile.TemporaryDirectory[str] | None = None  # new_file's
        # Once logged: the run's dir and its artifact records (held by its Run: a live store's
        # records are not all on disk yet).
        self._logged: tuple[Path, list[Logged]] | None = None

    @property
    def name(self) -> str:
        """Its name; once logged, W&B's ``<name>:v<N>``."""
        return f"{self._name}:{self.version}" if self._logged else self._name

    @property
    def manifest(self) -> Manifest:
        """Its files with their digests (read now; fixed once logged)."""
        if self._manifest is not None:
            return self._manifest
        return Manifest({path: _entry(path, local) for path, local in sorted(self._files.items())})

    @property
    def digest(self) -> str:
        """W&B's digest of its contents."""
        return self.manifest.digest()

    @property
    def size(self) -> int:
        """Bytes of its files together."""
        return sum(entry.size for entry in self.manifest)

    def files(self) -> list[ManifestEntry]:
        """Its files, as its manifest lists them."""
        return list(self.manifest)

    def _add(self, local: Path, name: str) -> None:
        if self._manifest is not None:
            raise ValueError(f"artifact {self.name!r} is logged: log a new one to change it")
        self._files[name.replace(os.sep, "/")] = local

    def add_file(self, local_path: str, name: str | None = None, **ignored: Any) -> ManifestEntry:
        """Add the file ``local_path`` as ``name`` (its base name by default)."""
        local = Path(local_path)
        if not local.is_file():
            raise ValueError(f"Path is not a file: {str(local_path)!r}")
        path = name or local.name
        self._add(local, path)
        return _entry(path, local)

    def add_dir(self, local_path: str, name: str | None = None, **ignored: Any) -> None:
        """Add every file below ``local_path``, under ``name`` (the root by default)."""
        root = Path(local_path)
        if not root.is_dir():
            raise ValueError(f"Path is not a directory: {str(local_path)!r}")
        for local in sorted(p for p in root.rglob("*") if p.is_file()):
            relative = local.relative_to(root).as_posix()
            self._add(local, f"{name.rstrip('/')}/{relative}" if name else relative)

    @contextmanager
    def new_file(
        self, name: str, mode: str = "x", encoding: str | None = None, **ignored: Any
    ) -> Iterator[IO[Any]]:
        """Open a new file ``name`` of the artifact to write; added when closed."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="artifact-")
        local = Path(self._tmp.name) / name
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local, mode, encoding=encoding) as handle:
            yield handle
        self._add(local, name)

    def add_reference(self, uri: Any, name: Any = None, **ignored: Any) -> list[Any]:
        """References are not kept offline: ValueError naming what to do instead."""
        raise ValueError(
            f"Artifact.add_reference({uri!r}): references are not stored offline; "
            "download the files and add them with add_file or add_dir"
        )

    def store(
        self, run_dir: Path, recorder: Any, step: int, aliases: Any, own: list[Logged]
    ) -> list[Path]:
        """Copy the files into the run's store and record the artifact there (see the
        module), and in ``own``, the run's records; the paths copied, for the transfer hook.
        Its manifest is fixed from here."""
        self.aliases = resolve_aliases(aliases)
        manifest = self._manifest = self.manifest
        digest = manifest.digest()
        copied, files = [], []
        for entry in manifest:
            stored = STORE_DIR / digest / entry.path
            target = run_dir / stored
            if not target.resolve().is_relative_to(run_dir.resolve()):
                raise ValueError(f"artifact file name {entry.path!r} leaves the artifact")
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(entry.local_path, "rb") as source, atomic_file(target) as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
            copied.append(target)
            files.append({**_plain_entry(entry), "stored": stored.as_posix()})
        data = fmt.artifact_record(
            self._name, self.type, files, metadata=plain(self.metadata),
            aliases=self.aliases, description=self.description or "",
        )  # fmt: skip
        wall = time.time()
        recorder.log_record("artifact", self._name, data, step, wall)
        own.append((run_dir.name, run_dir, ("artifact", self._name, step, wall, data)))
        self._logged = (run_dir, own)
        return copied

    @property
    def version(self) -> str:
        """``v<N>``, counted across the project's runs; AttributeError before logging."""
        return self._found().version

    def _found(self) -> ApiArtifact:
        if self._logged is None:
            raise AttributeError(f"{self._name!r}: version used before the artifact is logged")
        run_dir, own = self._logged
        return find_artifact(
            run_dir.parent, self._name, own=own, run_dir=run_dir, digest=self.digest
        )

    def download(self, root: str | os.PathLike[str] | None = None, **ignored: Any) -> str:
        """Copy its logged files into ``root`` (W&B's ``./artifacts/<name>:v<N>``)."""
        return self._found().download(root)

    def logged_by(self) -> str:
        """The run folder that logged it."""
        return self._found().logged_by()

    def __repr__(self) -> str:
        return f"<Artifact {self.name} ({self.type})>"


def _plain_entry(entry: ManifestEntry) -> dict[str, Any]:
    return {"path": entry.path, "digest": entry.digest, "size": entry.size}


def resolve_aliases(aliases: str | list[str] | None) -> list[str]:
    """W&B's: the aliases given (a string is one), unique, with ``latest``."""
    given = [aliases] if isinstance(aliases, str) else list(aliases or [])
    return list(dict.fromkeys([*given, "latest"]))


def artifact_of(artifact_or_path: Any, name: str | None, type: str | None, run_id: str) -> Artifact:
    """W&B's ``log_artifact`` argument as an :class:`Artifact`: a file or dir path becomes
    one named ``run-<run id>-<base name>`` unless ``name`` is given."""
    if isinstance(artifact_or_path, Artifact):
        return artifact_or_path
    if not isinstance(artifact_or_path, str | os.PathLike):
        raise TypeError(
            "You must pass an instance of wandb.Artifact or a valid file path to log_artifact"
        )
    path = Path(artifact_or_path)
    artifact = Artifact(name or f"run-{run_id}-{path.name}", type or "unspecified")
    if path.is_file():
        artifact.add_file(str(path))
    elif path.is_dir():
        artifact.add_dir(str(path))
    else:
        raise ValueError(f"{str(path)!r}: path must be a file or a directory to log as an artifact")
    return artifact


def split_spec(spec: str) -> tuple[str, str]:
    """W&B's ``[entity/project/]name[:version or alias]`` as (name, version or alias)."""
    name, _, which = spec.rsplit("/", 1)[-1].partition(":")
    return name, which or "latest"


def find_artifact(
    runs_dir: Path,
    spec: str,
    type: str | None = None,
    own: list[Logged] | None = None,
    run_dir: Path | None = None,
    digest: str = "",
) -> ApiArtifact:
    """The version ``spec`` names among the artifacts the runs of ``runs_dir`` logged (``own``:
    those of ``run_dir``, not yet on disk); with ``digest``, the version of those contents.
    :class:`ArtifactNotFoundError` naming it when none is, ValueError when its type is not
    ``type``."""
    from visualizer.api.artifacts import artifact_versions, runs_logged

    name, which = split_spec(spec)
    versions = artifact_versions(runs_logged(runs_dir, own or [], run_dir))
    for artifact in reversed(versions):
        if artifact.base_name == name and (
            artifact.digest == digest if digest else which in (artifact.version, *artifact.aliases)
        ):
            if type is not None and artifact.type != type:
                raise ValueError(
                    f"Supplied type {type} does not match type {artifact.type} of artifact "
                    f"{artifact.name}"
                )
            return artifact
    known = sorted({f"{a.base_name}:{a.version}" for a in versions})
    raise ArtifactNotFoundError(
        f"Artifact {name}:{which!r} not found in {runs_dir} "
        f"(logged there: {', '.join(known) or 'none'})"
    )
