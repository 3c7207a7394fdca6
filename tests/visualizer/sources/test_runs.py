"""A run is named by its metadata, so a copy or a download of it reads as the same run."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from tests.fixtures.runs.export import run_export
from visualizer.sources import runs as runs_module
from visualizer.sources.export import export_csv
from visualizer.sources.runs import LocalRuns, env_name

ROOT = Path(__file__).resolve().parents[3]


def _record(run_dir: Path, steps: int = 3) -> None:
    with Recorder(run_dir / "pickle", flush_interval=0.05, rank=0) as rec:
        for step in range(steps):
            rec.log({"loss": float(step)}, step=step)


def _flat_download(store: Path, to: Path) -> Path:
    """The store's files in one folder, as `aws s3 cp --recursive s3://.../exp1/pickle .` leaves them."""
    to.mkdir(parents=True)
    for path in store.iterdir():
        shutil.copy(path, to / path.name)
    return to


def _runs_in_csv(text: str) -> set[str]:
    return {row["run"] for row in csv.DictReader(io.StringIO(text))}


@pytest.mark.integration  # export in a process of its own
def test_export_of_a_flat_download_names_the_run_as_its_metadata_does(tmp_path):
    _record(tmp_path / "checkpoints" / "exp1")
    download = _flat_download(tmp_path / "checkpoints" / "exp1" / "pickle", tmp_path / "dl")
    proc = run_export(download)
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert _runs_in_csv(proc.stdout) == {"exp1"}


def test_two_copies_of_one_run_under_one_root_stay_apart(tmp_path):
    _record(tmp_path / "exp1")
    shutil.copytree(tmp_path / "exp1", tmp_path / "exp1-backup")
    out = io.StringIO()
    export_csv(str(tmp_path), out)
    assert _runs_in_csv(out.getvalue()) == {"exp1", "exp1-backup"}


def test_a_store_without_usable_metadata_is_named_after_its_folder(tmp_path):
    _record(tmp_path / "exp1")
    shutil.copytree(tmp_path / "exp1", tmp_path / "renamed")
    (tmp_path / "exp1" / "pickle" / fmt.META_FILE).unlink()
    (tmp_path / "renamed" / "pickle" / fmt.META_FILE).write_bytes(
        fmt.encode_document({"name": ["not", "a", "name"]})
    )
    assert sorted(spec.name for spec in LocalRuns(tmp_path).discover()) == ["exp1", "renamed"]


def test_runs_named_by_their_writer_keep_the_path_it_gave_in_the_table_and_env(tmp_path):
    # Lightning's versions of one experiment: every folder is version_<n>, the stored names
    # carry the experiment, as TensorBoard's path under its logdir does.
    for version in ("version_0", "version_1"):
        with Recorder(tmp_path / version / "pickle", name=f"lightning_logs/{version}", rank=0):
            pass
    names = sorted(spec.name for spec in LocalRuns(tmp_path).discover())
    assert names == ["lightning_logs/version_0", "lightning_logs/version_1"]
    envs = [env_name(name, None, multi=True) for name in names]
    assert envs == ["lightning_logs_version_0", "lightning_logs_version_1"]


def test_the_visualizer_draws_a_downloaded_run_in_its_stored_names_env(
    tmp_path, visdom_server, reader
):
    name = f"exp-{uuid.uuid4().hex[:8]}"
    _record(tmp_path / name)
    download = _flat_download(tmp_path / name / "pickle", tmp_path / "download")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "visualizer",
            "--pickle-dir",
            str(download),
            "--server",
            visdom_server.url,
            "--once",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert reader.traces(name, "train")["loss"] == ([0, 1, 2], [0.0, 1.0, 2.0])
    assert "download" not in reader.envs()


def test_a_root_whose_folders_did_not_change_is_not_listed_again(tmp_path, monkeypatch):
    for name in ("a", "b"):
        _record(tmp_path / name)
    (tmp_path / "c").mkdir()  # no store in it yet
    settled = time.time() - 60  # changed a minute ago: past its mtime's tick
    os.utime(tmp_path, (settled, settled))
    runs = LocalRuns(tmp_path)
    first = runs.found()
    assert [found.folder for found in first] == ["a", "b"]
    _record(tmp_path / "c")  # a store in a folder listed before: the root is listed again
    os.utime(tmp_path, (settled, settled))
    again = runs.found()
    assert [found.folder for found in again] == ["a", "b", "c"]
    assert all(x is y for x, y in zip(first, again, strict=False)), "folders known: not looked into"
    listed: list[object] = []
    monkeypatch.setattr(runs_module, "subfolders", lambda root: listed.append(root) or [])
    assert [found.folder for found in runs.found()] == ["a", "b", "c"] and not listed
    (tmp_path / "d").mkdir()  # a folder comes: the root's mtime tells
    runs.found()
    assert listed == [tmp_path]
