"""One run under W&B's names, compared with what was logged into its store."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from visualizer.api import Api

LOSSES = [2.0, 1.5, 1.25, 1.0]


@pytest.fixture
def store(tmp_path):
    store = tmp_path / "lr-0.1" / "pickle"
    options = {"lr": 0.1, "model": {"depth": 3, "widths": [8, 16]}}
    with Recorder(store, options=options, rank=0) as rec:
        for step, loss in enumerate(LOSSES):
            rec.log({"loss": loss}, step=step, group="train")
        rec.log({"loss": 1.1}, step=3, group="val")
        rec.log_record("text", "notes", {"text": "hello"}, 1, wall_time=5.0)
        rec.log_record("hparams", "hparams", {"hparams": {"model.depth": 3, "seed": 7},
                                              "metrics": {}}, 0)  # fmt: skip
        rec.log_image("sample", np.zeros((4, 4, 3), np.uint8), 2, dataformats="HWC")
    return store


def test_the_w_and_b_names_read_what_was_logged(store):
    run = Api().run(str(store))
    assert (run.name, run.state) == ("lr-0.1", "finished")
    # Options as stored, structures kept; hparams added unless a flattened copy of one.
    assert run.config == {"lr": 0.1, "model": {"depth": 3, "widths": [8, 16]}, "seed": 7}
    assert run.summary["train/loss"] == 1.0 and run.summary["val/loss"] == 1.1
    assert run.summary["_step"] == 3
    assert run.stats["train/loss"].min == 1.0 and run.stats["train/loss"].count == 4


def test_history_is_a_dataframe_a_row_a_step(store):
    frame = Api().run(str(store)).history()
    assert list(frame.columns) == ["_step", "train/loss", "val/loss", "_timestamp", "_runtime"]
    assert frame["train/loss"].tolist() == LOSSES
    assert frame["val/loss"].isna().tolist() == [True, True, True, False]
    assert str(frame["_step"].dtype) == "int64"


def test_history_keys_samples_and_plain_rows(store):
    run = Api().run(str(store))
    assert run.history(keys=["val/loss"])["_step"].tolist() == [3]
    assert run.history(keys="train/loss", samples=2)["train/loss"].tolist() == [2.0, 1.0]
    rows = run.history(pandas=False)
    stamp, runtime = rows[0]["_timestamp"], rows[0]["_runtime"]
    assert rows[0] == {"_step": 0, "train/loss": 2.0, "_timestamp": stamp, "_runtime": runtime}


def test_history_without_pandas_is_a_list_of_dicts(store, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # import pandas fails
    assert isinstance(Api().run(str(store)).history(), list)


def test_scan_history_yields_every_point(store):
    run = Api().run(str(store))
    rows = list(run.scan_history())
    assert [row["_step"] for row in rows] == [0, 1, 2, 3]
    assert [row["train/loss"] for row in rows] == LOSSES
    assert [row["_step"] for row in run.scan_history(min_step=1, max_step=3)] == [1, 2]


def test_history_and_scan_history_keep_two_values_logged_at_one_step(tmp_path):
    store = tmp_path / "run" / "pickle"
    with Recorder(store, rank=0) as rec:
        for step, epoch in [(0, 0.0), (1, 0.0), (1, 1.0), (2, 1.0)]:
            rec.log({"epoch": epoch}, step=step, group="")
            rec.log({"loss": 1.0 / (step + 1)}, step=step, group="val")
    run = Api().run(str(store))
    rows = list(run.scan_history(keys=["epoch"]))
    steps = [(row["_step"], row["epoch"]) for row in rows]
    assert steps == [(0, 0.0), (1, 0.0), (1, 1.0), (2, 1.0)]
    assert run.history(keys=["epoch"])["epoch"].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_images_and_texts_by_tag(store):
    run = Api().run(str(store))
    (image,) = run.images()["images/sample"]
    assert image.step == 2 and image.image().size == (4, 4)
    (text,) = run.texts()["notes"]
    assert (text.step, text.wall_time, text.data) == (1, 5.0, "hello")


def test_a_corrupt_segment_is_one_warning_and_the_rest_is_read(store, caplog):
    segment = next(store.glob("scalars-*.pickle"))
    good = segment.read_bytes()
    bad = bytearray(good)
    bad[-3] ^= 0xFF  # the copy's checksum no longer matches
    segment.write_bytes(good + bytes(bad))
    with caplog.at_level(logging.WARNING):
        frame = Api().run(str(store)).history()
    assert frame["train/loss"].tolist() == LOSSES
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipped the rest of" in warnings[0]
    assert "\n" not in warnings[0]


def test_a_store_without_a_summary_is_read_whole_once(store):
    status = fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), "status")
    del status["series"]  # as a writer before summaries left it
    (store / fmt.STATUS_FILE).write_bytes(fmt.encode_document(status))
    run = Api().run(str(store))
    assert run.summary["train/loss"] == 1.0 and run.summary["val/loss"] == 1.1
