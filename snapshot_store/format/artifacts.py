"""Artifacts (W&B's): the record of a named set of files a run logged or used, its digests, and
its versions, counted when read. No torch.

An ``artifact`` record (kind of the extras stream, :data:`~.schema.SCHEMAS`) holds
``name``, ``type``, ``description``, ``metadata`` (plain values), ``aliases``, ``digest``
(W&B's manifest digest: :func:`manifest_digest`) and ``files``, each ``{"path", "digest"
(base64 MD5, as W&B's manifest), "size", "stored" (where the bytes are, relative to the
run dir)}``. An ``artifact_use`` record holds ``name``, ``version`` (``""`` when unknown),
``digest``, ``run`` (the folder of the run that logged it) and ``stored``. Versions are not
stored: :func:`versions` counts them per name in logged order, a content equal to the
previous version's being that version (W&B makes no new version for unchanged contents).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

# W&B's manifest digest starts with this line (ArtifactManifestV1).
MANIFEST_HEADER = b"wandb-artifact-manifest-v1\n"
_CHUNK = 1 << 20


def file_digest(handle: IO[bytes]) -> tuple[str, int]:
    """W&B's digest of a file's bytes (base64 of their MD5) and their count, read from ``handle``."""
    md5, size = hashlib.md5(usedforsecurity=False), 0
    while chunk := handle.read(_CHUNK):
        md5.update(chunk)
        size += len(chunk)
    return base64.b64encode(md5.digest()).decode("ascii"), size


def manifest_digest(files: Iterable[Mapping[str, Any]]) -> str:
    """W&B's artifact digest: the MD5 (hex) of the header and each ``path:digest`` line,
    in path order."""
    md5 = hashlib.md5(MANIFEST_HEADER, usedforsecurity=False)
    for entry in sorted(files, key=lambda entry: entry["path"]):
        md5.update(f"{entry['path']}:{entry['digest']}\n".encode())
    return md5.hexdigest()


def artifact_record(
    name: str,
    type: str,
    files: Sequence[Mapping[str, Any]],
    *,
    metadata: Mapping[str, Any] | None = None,
    aliases: Sequence[str] = (),
    description: str = "",
) -> dict[str, Any]:
    """The data of an ``artifact`` record for ``files`` (each ``path``, ``digest``, ``size``,
    ``stored``)."""
    return {
        "name": name,
        "type": type,
        "description": description,
        "metadata": dict(metadata or {}),
        "aliases": list(aliases),
        "digest": manifest_digest(files),
        "files": [dict(entry) for entry in files],
    }


def _file_entry(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"path", "digest", "size", "stored"}
        and type(value["path"]) is str
        and type(value["digest"]) is str
        and type(value["size"]) is int
        and value["size"] >= 0
        and type(value["stored"]) is str
    )


def files_check(value: object) -> bool:
    """An artifact's ``files``: a list of well-typed manifest entries."""
    return isinstance(value, list) and all(map(_file_entry, value))


def versions(logged: Sequence[tuple[str, tuple]]) -> list[tuple[str, list[str]]]:
    """Each ``(run, artifact record)`` of ``logged`` (in logged order) with its version
    (``v0``...) and the aliases that version holds at the end: an alias is the last version's
    that was given it, ``latest`` the newest version of the name."""
    count: dict[str, int] = {}
    last: dict[str, tuple[str, str]] = {}  # name -> (version, digest)
    alias_at: dict[tuple[str, str], str] = {}
    numbered = []
    for _run, record in logged:
        data = record[4]
        name = data["name"]
        previous = last.get(name)
        if previous is not None and previous[1] == data["digest"]:
            version = previous[0]
        else:
            version = f"v{count.get(name, 0)}"
            count[name] = count.get(name, 0) + 1
        last[name] = (version, data["digest"])
        for alias in data["aliases"]:
            alias_at[(name, alias)] = version
        numbered.append((name, version))
    held: dict[tuple[str, str], list[str]] = {}  # (name, version) -> the aliases it holds
    for (name, alias), version in alias_at.items():
        held.setdefault((name, version), []).append(alias)
    out = []
    for name, version in numbered:
        aliases = sorted(held.get((name, version), ()))
        if version == last[name][0] and "latest" not in aliases:
            aliases.append("latest")
        out.append((version, aliases))
    return out
