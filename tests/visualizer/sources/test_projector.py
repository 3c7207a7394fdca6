"""``export --kind projector``: an embedding logged with our SummaryWriter comes back as the
files torch's ``add_embedding`` writes, value for value and pixel for pixel."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.tensorboard import SummaryWriter as TBWriter

from remote_train_monitor import SummaryWriter
from run_core.exit_codes import ExitCode
from snapshot_store import read_store
from snapshot_store.write.encoders import MAX_EMBEDDING_BYTES
from visualizer.__main__ import main


def _log_both(tmp_path, log):
    """Call ``log(writer)`` with torch's writer and ours; their log dir and our export's."""
    with TBWriter(tmp_path / "tb") as tb:
        log(tb)
    with SummaryWriter(tmp_path / "ours" / "run") as ours:
        log(ours)
    out = tmp_path / "export"
    argv = ["export", "--pickle-dir", str(tmp_path / "ours"), "--kind", "projector"]
    assert main([*argv, "--out", str(out)]) == ExitCode.OK
    return tmp_path / "tb", out / "run"


def _same_files(tb, ours, subdirs):
    assert (ours / "projector_config.pbtxt").read_text() == (
        tb / "projector_config.pbtxt"
    ).read_text()
    for subdir in subdirs:
        names = sorted(p.name for p in (tb / subdir).iterdir())
        assert sorted(p.name for p in (ours / subdir).iterdir()) == names
        for name in names:
            mine, theirs = ours / subdir / name, tb / subdir / name
            if name.endswith(".png"):
                assert np.array_equal(np.asarray(Image.open(mine)), np.asarray(Image.open(theirs)))
            else:
                assert mine.read_bytes() == theirs.read_bytes(), name


def test_embeddings_export_as_torchs_projector_files(tmp_path):
    torch.manual_seed(0)
    features = torch.randn(100, 784)
    images = torch.rand(100, 1, 28, 28)
    words = [f"digit {i % 10}" for i in range(100)]
    rows = [[i % 10, f"w/{i}"] for i in range(12)]

    def log(writer):
        writer.add_embedding(features, metadata=words, label_img=images)
        writer.add_embedding(
            torch.arange(36.0).reshape(12, 3).double(), rows, global_step=3, tag="a/b%c",
            metadata_header=["digit", "word"],
        )  # fmt: skip
        writer.add_embedding(np.eye(4, dtype=np.int64), global_step=7, tag='q"é\x01\n')

    tb, ours = _log_both(tmp_path, log)
    _same_files(tb, ours, ["00000/default", "00003/a%2fb%25c", '00007/q"é\x01\n'])


def test_the_page_keeps_its_two_dimensional_view(tmp_path):
    with SummaryWriter(tmp_path / "run") as writer:
        writer.add_embedding(torch.randn(10, 4), metadata=list("abcdefghij"))
    _history, reader, update = read_store(tmp_path / "run")
    [(kind, tag, _step, _wall, data)] = update.extras
    assert reader.warnings == [] and (kind, tag) == ("embedding", "default")
    assert len(data["x"]) == len(data["y"]) == 10 and data["labels"][:2] == ["a", "b"]


def test_a_huge_embedding_is_refused_with_one_warning(tmp_path, caplog):
    rows = MAX_EMBEDDING_BYTES // (4 * 1000) + 1
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path / "run") as writer:
        writer.add_embedding(torch.zeros(rows, 1000))
    assert "log a sample of its rows" in caplog.text
    assert len([r for r in caplog.records if "embedding" in r.getMessage()]) == 1
    assert read_store(tmp_path / "run")[2].extras == []


def test_projector_needs_an_out_folder(tmp_path):
    with pytest.raises(SystemExit):
        main(["export", "--pickle-dir", str(tmp_path), "--kind", "projector"])
