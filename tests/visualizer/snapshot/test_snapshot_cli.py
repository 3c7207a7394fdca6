"""``python -m visualizer snapshot``: a file written whole, or one line and no file."""

from __future__ import annotations

import os

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from visualizer.__main__ import main


@pytest.fixture
def root(tmp_path):
    with Recorder(tmp_path / "runs" / "a" / "pickle", name="a") as rec:
        rec.log({"loss": 1.0}, step=0)
        rec.log({"loss": 0.5}, step=1)
    return tmp_path / "runs"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_the_file_is_written_with_plotly_and_the_data_inline(root, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["snapshot", "--pickle-dir", str(root), "--out", str(out)]) == ExitCode.OK
    text = out.read_text(encoding="utf-8")
    assert "plotly.js v2.11.1" in text and 'id="snapshot-data"' in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "http://" not in text.split("<script", 1)[0]  # nothing fetched by the page's head
    assert f"wrote {out}" in _one_line(capsys)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_a_missing_dir_is_one_line_and_no_file(tmp_path, capsys):
    out = tmp_path / "report.html"
    code = main(["snapshot", "--pickle-dir", str(tmp_path / "nowhere"), "--out", str(out)])
    assert code == ExitCode.NO_DATA
    line = _one_line(capsys)
    assert "nowhere" in line and "--pickle-dir" in line
    assert not out.exists()


def test_no_run_matching_is_one_line_and_no_file(root, tmp_path, capsys):
    out = tmp_path / "report.html"
    code = main(["snapshot", "--pickle-dir", str(root), "--runs", "^b", "--out", str(out)])
    assert code == ExitCode.NO_DATA
    assert "--runs '^b' matches none of the 1 runs" in _one_line(capsys)
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_an_unwritable_out_is_one_line_and_no_file(root, tmp_path, capsys):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        code = main(["snapshot", "--pickle-dir", str(root), "--out", str(folder / "r.html")])
        assert code == ExitCode.FAILED
        line = _one_line(capsys)
        assert "permission denied" in line and "--out" in line
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)


def test_an_out_in_a_missing_folder_is_one_line(root, tmp_path, capsys):
    out = tmp_path / "no" / "such" / "r.html"
    code = main(["snapshot", "--pickle-dir", str(root), "--out", str(out)])
    assert code == ExitCode.FAILED
    line = _one_line(capsys)
    assert str(out) in line and "choose an --out" in line
    assert not (tmp_path / "no").exists()


def test_an_out_that_is_a_folder_is_one_line_and_leaves_nothing_beside(root, tmp_path, capsys):
    folder = tmp_path / "taken"
    folder.mkdir()
    code = main(["snapshot", "--pickle-dir", str(root), "--out", str(folder)])
    assert code == ExitCode.FAILED
    assert str(folder) in _one_line(capsys)
    assert folder.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["runs", "taken"]


@pytest.mark.parametrize("count", ["0", "x", "501"])
def test_a_compare_count_out_of_range_is_refused(root, count, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["snapshot", "--pickle-dir", str(root), "--compare", count])
    assert stop.value.code == ExitCode.USAGE
    assert "--compare: a number of runs from 1 to 500" in capsys.readouterr().err
