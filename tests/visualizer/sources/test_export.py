"""``python -m visualizer export --kind``: the extra record kinds as JSON lines."""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from remote_train_monitor import SummaryWriter
from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from visualizer.__main__ import main


@pytest.fixture
def store(tmp_path):
    store = tmp_path / "myrun" / "pickle"
    with Recorder(store, rank=0) as rec:
        rec.log({"loss": 1.0}, step=0)
        rec.log_record("text", "notes", {"text": "hello"}, 1, wall_time=5.0)
        rec.log_record("hparams", "hparams", {"hparams": {"lr": 0.1}, "metrics": {"acc": 0.5}}, 0)
        rec.log_image("sample", np.zeros((4, 4, 3), np.uint8), 2, dataformats="HWC")
        rec.log_record("audio", "a", {"wav": b"RIFF-bytes", "sample_rate": 8000.0}, 3)
    return store


def _lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_one_kind_is_exported_as_json_lines(store, capsys):
    assert main(["export", "--pickle-dir", str(store), "--kind", "text"]) == ExitCode.OK
    assert _lines(capsys) == [
        {
            "run": "myrun",
            "kind": "text",
            "tag": "notes",
            "step": 1,
            "wall_time": 5.0,
            "data": {"text": "hello"},
        }
    ]


def test_all_kinds_carry_their_bytes_as_base64(store, capsys):
    assert main(["export", "--pickle-dir", str(store), "--kind", "all"]) == ExitCode.OK
    lines = {line["kind"]: line for line in _lines(capsys)}
    assert set(lines) == {"text", "hparams", "audio", "image"}
    assert base64.b64decode(lines["audio"]["data"]["wav"]) == b"RIFF-bytes"
    assert base64.b64decode(lines["image"]["data"]["png"]).startswith(b"\x89PNG")
    assert lines["image"]["tag"] == "images/sample" and lines["hparams"]["data"]["metrics"] == {
        "acc": 0.5
    }


def test_the_default_is_still_the_csv_of_scalars(store, capsys):
    assert main(["export", "--pickle-dir", str(store)]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "run,group,tag,step,epoch,wall_time,value" and len(out) == 2


def test_an_unknown_kind_is_a_usage_error_listing_the_kinds(store, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--pickle-dir", str(store), "--kind", "pie"])
    assert exit_info.value.code == ExitCode.USAGE
    assert "invalid choice: 'pie'" in capsys.readouterr().err


def test_a_store_from_before_names_were_kept_exports_as_before(capsys):
    v1 = Path(__file__).parents[2] / "snapshot_store" / "data" / "store_v1"
    assert main(["export", "--pickle-dir", str(v1)]) == ExitCode.OK
    rows = {tuple(line.split(",")[1:3]) for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows == {("train", "train/acc"), ("train", "train/loss")}
    assert main(["export", "--pickle-dir", str(v1), "--kind", "image"]) == ExitCode.OK
    assert {line["tag"] for line in _lines(capsys)} == {"images/sample"}


def test_kept_names_are_exported_as_logged(tmp_path, capsys):
    with SummaryWriter(tmp_path / "run") as writer:
        for tag in ("loss", "train_loss", "train/loss", "a/b/c"):
            writer.add_scalar(tag, 1.0, 0)
    assert main(["export", "--pickle-dir", str(tmp_path / "run")]) == ExitCode.OK
    rows = {tuple(line.split(",")[1:3]) for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows == {("", "loss"), ("", "train_loss"), ("train", "train/loss"), ("a", "a/b/c")}


# --- issue 35: a row a run, Parquet, --runs ------------------------------------------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    from workloads.many_runs import write_runs

    root = tmp_path_factory.mktemp("sweep")
    write_runs(root, 6, points=30, workers=1)
    return root


def test_kind_runs_is_a_row_a_run_with_config_and_summary_columns(sweep, capsys):
    import csv

    from visualizer.api import Api

    assert main(["export", "--pickle-dir", str(sweep), "--kind", "runs"]) == ExitCode.OK
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    runs = Api().runs(str(sweep))
    assert [row["name"] for row in rows] == [run.name for run in runs]
    for row, run in zip(rows, runs):
        assert row["state"] == run.state and int(row["steps"]) == run.step
        assert float(row["config.lr"]) == run.config["lr"]
        assert float(row["summary.val/loss"]) == run.summary["val/loss"]


def test_parquet_holds_the_csvs_points_typed(sweep, capsysbinary):
    import pandas as pd

    assert main(["export", "--pickle-dir", str(sweep), "--runs", "0000[24]"]) == ExitCode.OK
    csv_text = capsysbinary.readouterr().out.decode()
    csv_frame = pd.read_csv(io.StringIO(csv_text), keep_default_na=False)
    args = ["export", "--pickle-dir", str(sweep), "--runs", "0000[24]", "--format", "parquet"]
    assert main(args) == ExitCode.OK
    frame = pd.read_parquet(io.BytesIO(capsysbinary.readouterr().out))
    assert set(frame["run"]) == {"run-00002", "run-00004"}
    assert str(frame["step"].dtype) == "int64" and str(frame["value"].dtype) == "float64"
    as_text = dict.fromkeys(("run", "group", "tag"), str)
    pd.testing.assert_frame_equal(frame.astype(as_text), csv_frame.astype(as_text))


def test_parquet_of_the_runs_table_types_its_columns(sweep, capsysbinary):
    import pandas as pd

    args = ["export", "--pickle-dir", str(sweep), "--kind", "runs", "--format", "parquet"]
    assert main(args) == ExitCode.OK
    frame = pd.read_parquet(io.BytesIO(capsysbinary.readouterr().out))
    assert len(frame) == 6
    assert str(frame["start"].dtype) == "datetime64[us, UTC]"
    assert str(frame["config.batch_size"].dtype) == "int64"
    assert str(frame["summary.train/loss"].dtype) == "float64"


def _errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


def test_runs_matching_nothing_is_one_line(sweep, caplog):
    assert main(["export", "--pickle-dir", str(sweep), "--runs", "^nope"]) == ExitCode.NO_DATA
    (err,) = _errors(caplog)
    assert "--runs '^nope' matches none of the 6 runs" in err and "\n" not in err


def test_parquet_without_pyarrow_names_the_extra_in_one_line(sweep, caplog, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    args = ["export", "--pickle-dir", str(sweep), "--format", "parquet"]
    assert main(args) == ExitCode.USAGE
    (err,) = _errors(caplog)
    assert "pip install 'remote-train-monitor[parquet]'" in err and "\n" not in err


def test_parquet_of_a_json_lines_kind_is_a_usage_error(sweep, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--pickle-dir", str(sweep), "--kind", "text", "--format", "parquet"])
    assert exit_info.value.code == ExitCode.USAGE
    assert "--format parquet writes --kind scalars or runs" in capsys.readouterr().err


def test_two_values_logged_at_one_step_are_both_exported_in_logged_order(tmp_path, capsys):
    with SummaryWriter(tmp_path / "run") as writer:
        for step, epoch in [(0, 0.0), (1, 0.5), (1, 1.0), (2, 1.0)]:
            writer.add_scalar("train/epoch", epoch, step)
    assert main(["export", "--pickle-dir", str(tmp_path / "run")]) == ExitCode.OK
    rows = [line.split(",") for line in capsys.readouterr().out.splitlines()[1:]]
    assert [(row[3], row[6]) for row in rows] == [("0", "0.0"), ("1", "0.5"), ("1", "1.0"),
                                                  ("2", "1.0")]  # fmt: skip
