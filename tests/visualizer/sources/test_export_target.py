"""The export is written whole or not at all, a failed write is one line and exit 1, and a
CSV cell a spreadsheet would run as a formula is written as text (docs/runs-as-data.md)."""

from __future__ import annotations

import csv
import errno
import io
import logging
import os
import subprocess
import sys

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.processes import REPO
from visualizer.__main__ import main
from visualizer.api.table import FORMULA_STARTS
from visualizer.sources import export_target

HOSTILE = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Two runs: a long one (CSV of ~300 kB) and one whose strings all begin a formula."""
    root = tmp_path_factory.mktemp("export")
    with Recorder(root / "long" / "pickle", options={"lr": -0.5}) as rec:
        for step in range(5_000):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    options = {f"o{i}": text for i, text in enumerate(HOSTILE)}
    with Recorder(root / "formula" / "pickle", name="=HYPERLINK(1)", options=options) as rec:
        rec.log({"=cmd": 1.0, "-neg": -1.0}, step=0, group="@grp")
    return root


def _one_error_line(stderr: str, cause: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and cause in lines[0] and "Traceback" not in stderr, stderr


@pytest.mark.integration
def test_a_full_disk_under_standard_output_is_one_line_and_exit_1(root):
    argv = [sys.executable, "-m", "visualizer", "export", "--pickle-dir", str(root)]
    with open("/dev/full", "w") as full:
        result = subprocess.run(argv, cwd=REPO, stdout=full, stderr=subprocess.PIPE, text=True)
    assert result.returncode == ExitCode.FAILED
    _one_error_line(result.stderr, "can not write standard output: the disk is full")


@pytest.mark.integration
def test_a_closed_standard_output_is_one_line_and_exit_1(root):
    command = f"{sys.executable} -m visualizer export --pickle-dir {root} >&-"
    result = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == ExitCode.FAILED
    _one_error_line(result.stderr, "standard output is closed; use --output FILE")


@pytest.mark.integration
def test_a_pipe_closed_by_its_reader_is_one_line_and_exit_1(root):
    argv = [sys.executable, "-m", "visualizer", "export", "--pickle-dir", str(root)]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.read(100)
    proc.stdout.close()  # as `| head` does
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == ExitCode.FAILED
    _one_error_line(stderr.decode(), "the reader closed the pipe before the export ended")


class _FillingDisk(io.FileIO):
    """A file that takes 10 kB, then fails every write with ``code`` (ENOSPC: a full disk)."""

    code = errno.ENOSPC

    def write(self, data) -> int:
        if self.tell() + len(data) > 10_000:
            raise OSError(self.code, os.strerror(self.code))
        return super().write(data)


def _text(raw: io.FileIO) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(raw), newline="")


def test_a_file_under_standard_output_is_cut_back_when_the_disk_fills(
    root, tmp_path, monkeypatch, caplog
):
    target = tmp_path / "out.csv"
    out = _text(_FillingDisk(target, "w"))
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["export", "--pickle-dir", str(root)]) == ExitCode.FAILED
    assert target.read_text() == "", "no partial file that looks complete"
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert told == [
        "can not write standard output: the disk is full; nothing of the export was kept"
    ]


@pytest.mark.parametrize(("code", "cause"), [(errno.ENOSPC, "the disk is full"),
                                             (errno.EROFS, "read-only")])  # fmt: skip
def test_output_is_replaced_whole_or_not_at_all(root, tmp_path, monkeypatch, caplog, code, cause):
    target = tmp_path / "runs.csv"
    target.write_text("the last export\n")
    assert (
        main(["export", "--pickle-dir", str(root), "--kind", "runs", "--output", str(target)]) == 0
    )
    assert target.read_text().startswith("name,state,steps")
    target.write_text("the last export\n")
    monkeypatch.setattr(_FillingDisk, "code", code)
    monkeypatch.setattr(
        export_target.os, "fdopen", lambda fd, *_, **__: _text(_FillingDisk(fd, "w"))
    )
    assert main(["export", "--pickle-dir", str(root), "--output", str(target)]) == 1
    assert target.read_text() == "the last export\n" and sorted(tmp_path.iterdir()) == [target]
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(told) == 1 and f"can not write {target}: " in told[0] and cause in told[0]


def test_a_read_only_folder_for_output_is_one_line(root, tmp_path, monkeypatch, caplog):
    def mkstemp(**_):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(export_target.tempfile, "mkstemp", mkstemp)
    target = tmp_path / "ro" / "runs.csv"
    assert main(["export", "--pickle-dir", str(root), "--output", str(target)]) == 1
    told = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert told == [
        f"can not write {target}: the file system is read-only; nothing of the export was kept"
    ]


# --- formulas in CSV cells (OWASP: a leading ') ---------------------------------------------


def _csv(capsys) -> list[list[str]]:
    return list(csv.reader(io.StringIO(capsys.readouterr().out)))


def test_a_cell_that_begins_a_formula_is_written_as_text_in_the_runs_table(root, capsys):
    assert main(["export", "--pickle-dir", str(root), "--kind", "runs"]) == ExitCode.OK
    header, *rows = _csv(capsys)
    row = dict(zip(header, next(r for r in rows if "HYPERLINK(1)" in r[0]), strict=True))
    assert row["name"] == "'=HYPERLINK(1)"
    assert [row[f"config.o{i}"] for i in range(len(HOSTILE))] == [f"'{t}" for t in HOSTILE]
    long = dict(zip(header, next(r for r in rows if r[0] == "long"), strict=True))
    assert long["config.lr"] == "-0.5", "a number is written as a number"
    assert all(not cell.startswith(FORMULA_STARTS) or _number(cell) for r in rows for cell in r)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_a_cell_that_begins_a_formula_is_written_as_text_in_the_points(root, capsys):
    assert main(["export", "--pickle-dir", str(root), "--runs", "HYPER"]) == ExitCode.OK
    rows = _csv(capsys)[1:]
    assert {tuple(r[:3]) for r in rows} == {
        ("'=HYPERLINK(1)", "'@grp", "'@grp/=cmd"),
        ("'=HYPERLINK(1)", "'@grp", "'@grp/-neg"),
    }
    assert [r[6] for r in rows if r[2] == "'@grp/-neg"] == ["-1.0"], "a number as a number"


def test_raw_csv_keeps_the_cells_as_stored(root, capsys):
    argv = ["export", "--pickle-dir", str(root), "--kind", "runs", "--raw-csv"]
    assert main(argv) == ExitCode.OK
    assert "=HYPERLINK(1)" in [r[0] for r in _csv(capsys)[1:]]


def test_parquet_keeps_the_values_as_stored(root, capsysbinary):
    import pyarrow.parquet as pq

    argv = ["export", "--pickle-dir", str(root), "--kind", "runs", "--format", "parquet"]
    assert main(argv) == ExitCode.OK
    table = pq.read_table(io.BytesIO(capsysbinary.readouterr().out)).to_pylist()
    assert {r["name"] for r in table} == {"=HYPERLINK(1)", "long"}
