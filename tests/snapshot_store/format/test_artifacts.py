"""Artifact digests as W&B computes them, and versions counted in logged order."""

from __future__ import annotations

import pytest

from snapshot_store.format import artifacts
from snapshot_store.format.schema import record_problem


def _record(name: str, digest: str, aliases: list[str]) -> tuple:
    data = artifacts.artifact_record(name, "model", [], aliases=aliases)
    return ("artifact", name, 0, 0.0, {**data, "digest": digest})


def test_the_digests_are_wandbs(tmp_path):
    wandb = pytest.importorskip("wandb")
    files = {"model.pth": b"weights", "sub/notes.txt": b"text"}
    artifact = wandb.Artifact("m", type="model")
    entries = []
    for name, data in files.items():
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(data)
        artifact.add_file(str(path), name=name)
        with path.open("rb") as handle:
            digest, size = artifacts.file_digest(handle)
        entries.append({"path": name, "digest": digest, "size": size, "stored": path.name})
        assert digest == artifact.manifest.entries[name].digest and size == len(data)
    assert artifacts.manifest_digest(entries) == artifact.manifest.digest()
    record = artifacts.artifact_record("m", "model", entries, metadata={"step": 3})
    assert record_problem(("artifact", "m", 3, 1.0, record)) is None


def test_unchanged_contents_are_the_same_version_and_aliases_move_to_the_newest():
    logged = [
        ("r", _record("m", "a", ["latest", "epoch_1"])),
        ("r", _record("m", "a", ["best"])),
        ("r", _record("m", "b", ["latest"])),
        ("s", _record("other", "c", [])),
    ]
    assert artifacts.versions(logged) == [
        ("v0", ["best", "epoch_1"]),
        ("v0", ["best", "epoch_1"]),
        ("v1", ["latest"]),
        ("v0", ["latest"]),
    ]


def test_a_malformed_manifest_is_refused_by_the_schema():
    record = artifacts.artifact_record("m", "model", [])
    bad = {**record, "files": [{"path": "x", "digest": "d", "size": "1", "stored": "x"}]}
    assert "files" in str(record_problem(("artifact", "m", 0, 0.0, bad)))
