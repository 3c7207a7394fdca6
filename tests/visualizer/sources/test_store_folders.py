"""The walk of a directory of runs survives any one entry: a symlink loop, a folder closed or
deleted while listed; a symlink out of the root is not followed (docs/bad-input.md)."""

from __future__ import annotations

import logging
import os

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.hostile import write_good
from visualizer.__main__ import main
from visualizer.api import Api
from visualizer.sources import runs as runs_module
from visualizer.sources import store_folders
from visualizer.sources.runs import LocalRuns
from visualizer.sources.store_folders import subfolders

GOOD = ["run-00000", "run-00001"]


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "runs"
    write_good(root, len(GOOD))
    return root


def _names(root) -> list[str]:
    return sorted(run.name for run in Api().runs(str(root)))


def test_a_pickle_dir_that_links_to_itself_is_no_store_and_the_others_are_read(root, capsys):
    (root / "looped").mkdir()
    (root / "looped" / "pickle").symlink_to(root / "looped" / "pickle")
    (root / "self").symlink_to(root / "self")  # a run dir that is a loop itself
    assert _names(root) == GOOD
    assert main(["export", "--pickle-dir", str(root), "--kind", "runs"]) == ExitCode.OK
    assert len(capsys.readouterr().out.splitlines()) == 1 + len(GOOD)
    assert main(["export", "--pickle-dir", str(root)]) == ExitCode.OK


def test_a_folder_closed_or_gone_while_listed_is_none(root, monkeypatch):
    listed = subfolders

    def listing(path):
        return [*listed(path), str(path / "gone"), str(path / "closed")]

    real_scandir = os.scandir

    def scandir(path):
        if str(path).endswith("closed") or str(path).endswith(f"closed{os.sep}pickle"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(runs_module, "subfolders", listing)
    monkeypatch.setattr(store_folders.os, "scandir", scandir)
    assert [found.folder for found in LocalRuns(root).found()] == GOOD


def test_a_root_that_can_not_be_listed_has_no_folders(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert subfolders(tmp_path / "loop") == [] and subfolders(tmp_path / "absent") == []


def test_a_link_out_of_the_root_is_skipped_with_one_warning_and_one_inside_is_followed(
    root, tmp_path, caplog, capsys
):
    elsewhere = tmp_path / "private"
    write_good(elsewhere, 3)  # run-00002 has the password
    (root / "linked-run").symlink_to(elsewhere / "run-00002")
    (root / "linked-store").mkdir()
    (root / "linked-store" / "pickle").symlink_to(elsewhere / "run-00002" / "pickle")
    (root / "alias").symlink_to(root / "run-00001")  # inside the root: followed
    caplog.set_level(logging.WARNING)
    runs = LocalRuns(root)
    assert [f.folder for f in runs.found()] == ["alias", *GOOD]
    runs.found()  # looked at again: told once
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(told) == 2, told
    assert all("outside" in m and str(elsewhere / "run-00002") in m for m in told), told
    assert main(["export", "--pickle-dir", str(root), "--kind", "runs"]) == ExitCode.OK
    assert "run-00002" not in capsys.readouterr().out
