"""snapshot_store.write.null_recorder: Recorder(...) on another rank records nothing, touches nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from snapshot_store import Recorder
from snapshot_store.write.null_recorder import NullRecorder
from tests.fixtures.runs.ranks import as_rank_one


@pytest.fixture
def rank_one(monkeypatch):
    as_rank_one(monkeypatch)


def test_non_zero_rank_touches_no_file(tmp_path, rank_one):
    announced: list[tuple[Path, bool]] = []
    rec = Recorder(tmp_path / "run" / "pickle", on_file=lambda *args: announced.append(args))
    assert isinstance(rec, NullRecorder) and isinstance(rec, Recorder)
    rec.log({"loss": 1.0}, step=0)
    rec.log_scalar("loss", 1.0, step=1)
    rec.log_image("x", np.zeros((2, 2)), step=0, dataformats="HW")
    rec.log_record("text", "note", {"text": "hi"}, step=0)
    rec.set_status(total_steps=3)
    rec.set_options({"lr": 0.1})  # Lightning's hyperparameters reach every rank's logger
    assert rec.flush() is True
    rec.close()
    assert rec.closed
    assert list(tmp_path.iterdir()) == [] and announced == []


def test_a_rank_named_by_the_framework_wins_over_the_environment(tmp_path, rank_one):
    with Recorder(tmp_path / "pickle", rank=0) as rec:  # Lightning said: global rank zero
        assert type(rec) is Recorder
        rec.log({"loss": 1.0}, step=0)
    assert (tmp_path / "pickle" / "meta.pickle").exists()
    assert isinstance(Recorder(tmp_path / "other", rank=3), NullRecorder)
    assert not (tmp_path / "other").exists()


def test_every_public_method_of_the_recorder_is_a_null_one():
    public = {name for name, value in vars(Recorder).items() if callable(value)}
    public = {name for name in public if not name.startswith("_")} - {"last_epoch"}
    assert public <= set(vars(NullRecorder)), public - set(vars(NullRecorder))
