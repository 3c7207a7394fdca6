"""A run's artifacts read back: a store's paths never lead outside the run or the download root."""

from __future__ import annotations

import pytest

from snapshot_store import Recorder
from tests.visualizer.panes.test_artifacts_pane import _logged
from visualizer.api import Api
from visualizer.api.artifacts import ArtifactFile, artifact_versions


def test_a_stored_path_outside_the_run_is_not_read(tmp_path):
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (tmp_path / "secret").write_text("no")
    record = _logged("r-checkpoint", "d0", ["latest"], 3, 0.5)
    record[4]["files"][0]["stored"] = "../../secret"
    [artifact] = artifact_versions([("r", run_dir, record)])
    [entry] = artifact.files()
    assert entry.local_path is None and "leaves the run" in entry.missing
    with pytest.raises(FileNotFoundError, match="model.pth: ../../secret leaves the run"):
        artifact.download(tmp_path / "out")


def test_a_file_name_leaving_the_download_root_is_refused(tmp_path):
    source = tmp_path / "a.pth"
    source.write_bytes(b"x")
    with pytest.raises(ValueError, match="leaves"):
        ArtifactFile("../../evil.pth", 1, "d", source).download(tmp_path / "root")
    assert not (tmp_path.parent / "evil.pth").exists()


def test_a_version_whose_file_was_overwritten_says_so(tmp_path):
    (tmp_path / "latest.pth").write_bytes(b"new")
    older = _logged("r-checkpoint", "d0", ["latest"], 3, 0.5)
    newer = _logged("r-checkpoint", "d1", ["latest"], 6, 0.25)
    first, second = artifact_versions([("r", tmp_path, older), ("r", tmp_path, newer)])
    assert (first.version, second.version) == ("v0", "v1")
    assert second.files()[0].local_path == (tmp_path / "latest.pth").resolve()
    with pytest.raises(FileNotFoundError, match="overwritten by a later checkpoint"):
        first.download(tmp_path / "out")


def test_versions_are_counted_across_the_runs_of_the_runs_dir(tmp_path):
    for run, digest, wall in (("a", "d0", 1.0), ("b", "d1", 2.0)):
        record = _logged("shared", digest, ["latest"], 1, 0.5)[4]
        with Recorder(tmp_path / run / "pickle") as recorder:
            recorder.log({"loss": 1.0}, step=1)
            recorder.log_record("artifact", "shared", record, 1, wall_time=wall)
    assert [a.name for a in Api().run(str(tmp_path / "a")).logged_artifacts()] == ["shared:v0"]
    [newest] = Api().run(str(tmp_path / "b")).logged_artifacts()
    assert newest.name == "shared:v1" and newest.aliases == ["latest"]
