"""Each kind's summary: built from TensorBoard's arguments, stored and read back as TensorBoard keeps it."""

from __future__ import annotations

import logging

import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TBWriter

from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from snapshot_store.write.encoders import DEFAULT_BINS
from tests.fixtures.logged.writer_calls import call_every_method
from trainer import SummaryWriter
from trainer.tensorboard import summaries

EXPECTED_EXTRAS = {
    ("tensor", "x"),
    ("histogram", "distribution centers"),
    ("histogram", "histogram_with_raw_data"),
    ("video", "video"),
    ("audio", "audio"),
    ("text", "lstm"),
    ("graph", "graph"),
    ("text", "onnx_graph"),
    ("embedding", "default"),
    ("pr_curve", "pr_curve"),
    ("pr_curve", "pr_raw"),
    ("layout", "custom_scalars"),
    ("mesh", "my_mesh"),
    *{("hparams", f"r{i}") for i in range(5)},
}


def test_every_method_is_stored_and_read_back(tmp_path, caplog):
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"\x08\x07")
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path / "run") as writer:
        call_every_method(writer, onnx_file)
    history, reader, update = read_store(tmp_path / "run")
    assert reader.warnings == [] and "not recorded" not in caplog.text
    assert {(kind, tag) for kind, tag, *_ in update.extras} == EXPECTED_EXTRAS
    assert {name for _g, name, *_ in update.images} == {
        "my_image",
        "my_image_batch",
        "boxes",
        "figure",
    }
    for _g, _n, _s, _e, _w, png in update.images:
        assert decode_png(png).ndim == 3
    assert ("run_14h", "tanx") in history.keys() and ("", "y=2x") in history.keys()
    # All at step 0: every value kept, in the order logged.
    assert history.series(("hparams", "hparam/accuracy"))[3] == [0.0, 10.0, 20.0, 30.0, 40.0]
    by_tag = {tag: data for _k, tag, _s, _w, data in update.extras}
    assert by_tag["x"] == {"shape": [3], "dtype": "int64", "values": [1.0, 2.0, 3.0]}
    assert by_tag["r4"]["hparams"] == {"lr": 0.4, "bsize": 4}
    assert (
        by_tag["graph"]["text"].startswith("Sequential(")
        and "40 parameters" in by_tag["graph"]["text"]
    )
    assert (
        by_tag["default"]["labels"][:2] == ["False0", "None1"]
        and len(by_tag["default"]["x"]) == 100
    )
    assert by_tag["my_mesh"]["faces"][:3] == [0, 2, 3] and len(by_tag["my_mesh"]["vertices"]) == 12
    assert by_tag["custom_scalars"]["layout"] == {
        "USA": {"margin": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]]}
    }
    assert by_tag["video"]["gif"].startswith(b"GIF8") and by_tag["audio"]["wav"].startswith(b"RIFF")


def test_histogram_buckets_match_tensorboards(tmp_path):
    from torch.utils.tensorboard.summary import histogram

    values = torch.randn(10_000)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", values, 7)
        writer.add_histogram("w8", values, 7, bins=8, max_bins=4)
    stored = {tag: data for _k, tag, _s, _w, data in read_store(tmp_path)[2].extras}
    for tag, bins, max_bins in (("w", DEFAULT_BINS, None), ("w8", 8, 4)):
        proto = histogram(tag, values, bins, max_bins=max_bins).value[0].histo
        assert stored[tag]["counts"] == list(proto.bucket)
        assert stored[tag]["limits"] == pytest.approx(list(proto.bucket_limit))
        assert stored[tag]["sum_squares"] == pytest.approx(proto.sum_squares, rel=1e-6)


def test_tensorboards_default_bins_are_ours(tmp_path):
    tb = TBWriter(str(tmp_path))  # TensorBoard makes its default bins in __init__
    tb.close()
    assert DEFAULT_BINS.tolist() == tb.default_bins


def test_a_summary_is_a_record_of_its_kind_and_tag_built_without_a_writer():
    assert summaries.text("note", "hi") == ("text", "note", {"text": "hi"}, None)
    kind, tag, (copied, fps), encode = summaries.video("v", torch.zeros(1, 2, 3, 4, 4), 8)
    assert (kind, tag, copied.shape, fps, encode is not None) == (
        "video",
        "v",
        (1, 2, 3, 4, 4),
        8,
        True,
    )
    row = summaries.hparams_row({"lr": torch.tensor(0.5), "token": "s3cr3t"}, {}, None)
    assert row.tag == "hparams" and row.value["hparams"] == {"lr": 0.5, "token": "***"}


def test_a_margin_chart_of_other_than_three_tags_is_one_warning(tmp_path, caplog):
    with pytest.raises(ValueError, match="a margin chart of 2 tags"):
        summaries.one_chart("Margin", ["a", "b"], "c", "t")
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path) as writer:
        writer.add_custom_scalars_marginchart(["a", "b"])
    assert "expected 3; that value is not recorded" in caplog.text
    assert read_store(tmp_path)[2].extras == []
