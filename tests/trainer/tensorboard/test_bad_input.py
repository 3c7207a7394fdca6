"""A value a method can not store is one warning naming the tag; another rank stores nothing."""

from __future__ import annotations

import logging

import torch

from snapshot_store import read_store
from tests.fixtures.logged.writer_calls import call_every_method
from trainer import SummaryWriter


def test_bad_input_is_one_warning_naming_the_tag_and_the_run_goes_on(tmp_path, caplog):
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path) as writer:
        writer.add_image("five_channels", torch.rand(5, 4, 4), 0)
        writer.add_histogram("has_nan", torch.tensor([1.0, float("nan")]), 0)
        writer.add_histogram("words", "not numbers", 0)
        writer.add_text("not_text", 3.5, 0)
        writer.add_hparams({"lr": 0.1}, {"acc": "high"})
        writer.add_scalar("loss", 1.0, 1)
    records = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for tag, why in (
        ("five_channels", "5 channels"),
        ("has_nan", "NaN"),
        ("words", "string"),
        ("not_text", "must be str"),
        ("hparams", "must be a number"),
    ):
        assert sum(tag in m or why in m for m in records) >= 1, (tag, records)
    assert len(records) == 5
    history, reader, update = read_store(tmp_path)
    assert update.extras == [] and update.images == []
    assert history.series(("", "loss"))[3] == [1.0] and update.status["state"] == "finished"


def test_another_rank_stores_nothing_and_raises_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path / "run", rank=1) as writer:
        call_every_method(writer, tmp_path / "missing.onnx")
        writer.add_image("five_channels", torch.rand(5, 4, 4), 0)
    assert not (tmp_path / "run").exists() and caplog.text == ""
