"""W&B's artifacts, offline: ``wandb.Artifact``, ``log_artifact``, ``log_model``,
``use_artifact(...).download()`` and ``Api().artifact``, digests equal to wandb 0.31's."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_store import read_store


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _extras(store: Path, kind: str) -> list[dict]:
    return [r[4] for r in read_store(store)[2].extras if r[0] == kind]


def test_an_artifact_logged_is_stored_versioned_and_downloaded_by_another_run(wandb, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("a")
    (tmp_path / "model.pt").write_bytes(b"weights")
    run = wandb.init(project="p", name="maker")
    artifact = wandb.Artifact("mnist", type="dataset", metadata={"rows": 3})
    artifact.add_dir("data", name="raw")
    artifact.add_file("model.pt")
    with artifact.new_file("notes.txt") as handle:
        handle.write("hello")
    logged = run.log_artifact(artifact, aliases=["best"])
    assert logged.aliases == ["best", "latest"] and logged.version == "v0"
    assert logged.name == "mnist:v0"
    run.log_artifact(wandb.Artifact("mnist", "dataset"))  # other contents: v1
    wandb.log_model("model.pt", name="net")
    wandb.finish()
    stored = _extras(tmp_path / "wandb" / "p" / "maker" / "pickle", "artifact")
    assert [(r["name"], r["type"], r["aliases"]) for r in stored] == [
        ("mnist", "dataset", ["best", "latest"]),
        ("mnist", "dataset", ["latest"]),
        ("net", "model", ["latest"]),
    ]
    assert sorted(f["path"] for f in stored[0]["files"]) == ["model.pt", "notes.txt", "raw/a.txt"]
    assert stored[0]["digest"] == artifact.digest and stored[0]["metadata"] == {"rows": 3}

    user = wandb.init(project="p", name="user")
    best = user.use_artifact("entity/p/mnist:best", type="dataset")
    assert (best.name, best.aliases, best.logged_by()) == ("mnist:v0", ["best"], "maker")
    root = Path(best.download())
    assert root == Path("artifacts/mnist:v0")
    assert _files(root) == {"model.pt": b"weights", "notes.txt": b"hello", "raw/a.txt": b"a"}
    assert wandb.use_artifact("mnist").version == "v1"  # latest
    assert Path(wandb.use_model("net:v0"), "model.pt").read_bytes() == b"weights"
    wandb.finish()
    uses = _extras(tmp_path / "wandb" / "p" / "user" / "pickle", "artifact_use")
    assert [(u["name"], u["version"], u["run"]) for u in uses] == [
        ("mnist", "v0", "maker"),
        ("mnist", "v1", "maker"),
        ("net", "v0", "maker"),
    ]
    assert uses[0]["stored"][0].startswith(f"pickle/artifacts/{artifact.digest}/")

    api_artifact = wandb.Api().artifact("entity/p/mnist:v0")
    assert api_artifact.digest == artifact.digest and api_artifact.logged_by() == "maker"
    maker = wandb.Api().run("entity/p/maker")
    assert [a.name for a in maker.logged_artifacts()] == ["mnist:v0", "mnist:v1", "net:v0"]
    assert [a.name for a in wandb.Api().run("entity/p/user").used_artifacts()] == [
        "mnist:v0",
        "mnist:v1",
        "net:v0",
    ]


def test_unchanged_contents_are_the_same_version_and_bad_input_is_named(wandb, tmp_path):
    (tmp_path / "m.pt").write_bytes(b"w")
    run = wandb.init(project="p", name="r")
    first = run.log_artifact("m.pt", name="m", type="model")
    again = run.log_artifact("m.pt", name="m", type="model", aliases="again")
    assert first.version == again.version == "v0"
    with pytest.raises(ValueError, match="Path is not a file: 'gone.pt'"):
        wandb.Artifact("x", "model").add_file("gone.pt")
    with pytest.raises(ValueError, match="Path is not a directory"):
        wandb.Artifact("x", "model").add_dir("gone")
    for bad in ("a/b", "a:b", ""):
        with pytest.raises(ValueError, match="artifact name"):
            wandb.Artifact(bad, "model")
    with pytest.raises(ValueError, match="must be a file or a directory"):
        run.log_artifact("gone.pt")
    with pytest.raises(ValueError, match="references are not stored offline"):
        wandb.Artifact("x", "model").add_reference("s3://bucket/key")
    with pytest.raises(wandb.CommError, match=r"m:'v7' not found .*logged there: m:v0"):
        run.use_artifact("m:v7")
    with pytest.raises(ValueError, match="not found"):  # W&B 0.31's own type for it
        wandb.Api().artifact("entity/p/other:latest")
    with pytest.raises(ValueError, match="does not match type model"):
        run.use_artifact("m:latest", type="dataset")
    with pytest.raises(AttributeError, match="before the artifact is logged"):
        _ = wandb.Artifact("x", "model").version


def test_the_digests_are_wandbs(wandb, tmp_path):
    real = pytest.importorskip("wandb")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.bin").write_bytes(bytes(range(256)))
    (tmp_path / "y.txt").write_text("y")
    ours, theirs = wandb.Artifact("a", "dataset"), real.Artifact("a", "dataset")
    for artifact in (ours, theirs):
        artifact.add_dir(str(tmp_path / "d"), name="sub")
        artifact.add_file(str(tmp_path / "y.txt"))
    assert {e.path: e.digest for e in ours.manifest.entries.values()} == {
        path: entry.digest for path, entry in theirs.manifest.entries.items()
    }
    assert ours.digest == theirs.manifest.digest()


def test_the_files_logged_go_through_the_transfer_hook(wandb, tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("TRANSFER_LOCAL_DIR", str(shared))
    (tmp_path / "m.pt").write_bytes(b"weights")
    run = wandb.init(project="p", name="n", remote_transfer_cmd="transfer_plugins.local.copy_to")
    artifact = run.log_artifact("m.pt", name="m", type="model")
    run.finish()
    sent = shared / "p" / "n" / "pickle" / "artifacts" / artifact.digest / "m.pt"
    assert sent.read_bytes() == b"weights"
