"""trainer.tensorboard.null_writer: SummaryWriter(...) on another rank records nothing, opens nothing."""

from __future__ import annotations

import numpy as np
import pytest

from remote_train_monitor import SummaryWriter
from snapshot_store.write.null_recorder import NullRecorder
from tests.fixtures.runs.ranks import as_rank_one
from trainer.tensorboard.null_writer import NullSummaryWriter


@pytest.fixture
def rank_one(monkeypatch):
    as_rank_one(monkeypatch)


def test_another_ranks_writer_takes_every_call_and_touches_no_file(tmp_path, rank_one):
    log_dir = tmp_path / "run"
    with SummaryWriter(log_dir, remote_transfer_cmd="no_such_module.save") as writer:
        assert isinstance(writer, NullSummaryWriter) and isinstance(writer.recorder, NullRecorder)
        writer.add_scalar("loss", 1.0, 0)
        writer.add_scalars("loss", {"a": 1.0}, 0)
        writer.add_image("x", np.zeros((3, 2, 2)), 0)
        writer.add_text("note", "hi", 0)
        writer.add_histogram("w", np.arange(10.0), 0)
        writer.add_hparams({"lr": 0.1}, {"acc": 1.0})
        writer.flush()
        assert writer.get_logdir() == str(log_dir)
    writer.close()
    assert list(tmp_path.iterdir()) == []  # no store, and the hook was never even resolved


def test_a_rank_named_by_the_framework_wins_over_the_environment(tmp_path, rank_one):
    writer = SummaryWriter(tmp_path / "run", rank=0)  # an adapter: the framework said rank zero
    assert type(writer) is SummaryWriter
    writer.close()
    assert (tmp_path / "run" / "meta.pickle").exists()


def test_every_public_method_of_the_writer_is_a_null_one():
    public = {name for name, value in vars(SummaryWriter).items() if callable(value)}
    public = {name for name in public if not name.startswith("_")} - {"get_logdir"}
    assert public <= set(vars(NullSummaryWriter)), public - set(vars(NullSummaryWriter))
