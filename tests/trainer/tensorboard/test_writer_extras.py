"""The whole SummaryWriter: TensorBoard's signatures, every method stored and read back."""

from __future__ import annotations

import inspect
import logging

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TBWriter

from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from snapshot_store.write.encoders import DEFAULT_BINS
from tests.fixtures.writer_calls import call_every_method
from trainer import SummaryWriter

TB_METHODS = sorted(
    name
    for name, _ in inspect.getmembers(TBWriter, inspect.isfunction)
    if not name.startswith("_") or name in ("__init__", "__enter__", "__exit__")
)


def _params(func) -> list[tuple[str, object, object]]:
    """Name, kind and default of each parameter, TensorBoard's extensions (**kwargs) left out."""
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(func).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


@pytest.mark.parametrize("name", TB_METHODS)
def test_every_method_of_tensorboards_writer_has_its_parameters(name):
    ours = getattr(SummaryWriter, name, None)
    assert ours is not None, f"SummaryWriter has no {name}"
    assert _params(ours) == _params(getattr(TBWriter, name))


EXPECTED_EXTRAS = {
    ("tensor", "x"),
    ("histogram", "distribution centers"),
    ("histogram", "histogram_with_raw_data"),
    ("video", "video"),
    ("audio", "audio"),
    ("text", "lstm"),
    ("text", "graph"),
    ("text", "onnx_graph"),
    ("points", "default"),
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
    assert history.series(("hparams", "hparam/accuracy"))[3] == [40.0]  # all at step 0: the last
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


def test_writing_after_close_reopens_the_store_as_tensorboard_does(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.add_scalar("loss", 1.0, 0)
    writer.close()
    writer.add_scalar("loss", 0.5, 1)
    writer.add_text("note", "after close", 1)
    writer.close()
    with writer:
        writer.add_scalar("loss", 0.25, 2)
    writer.add_histogram("w", np.arange(10.0), 3)
    writer.close()
    history, _, update = read_store(tmp_path)
    assert history.series(("", "loss"))[3] == [1.0, 0.5, 0.25]
    assert [tag for _k, tag, *_ in update.extras] == ["note", "w"]
    assert len(update.meta["sessions"]) == 4 and update.status["state"] == "finished"


def test_walltime_is_kept_and_defaults_to_now(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("given", "a", 1, walltime=1234.5)
        writer.add_text("now", "b", 1)
    walls = {tag: wall for _k, tag, _s, wall, _d in read_store(tmp_path)[2].extras}
    assert walls["given"] == 1234.5 and walls["now"] > 1e9


@pytest.mark.parametrize(
    "shape, dataformats, expected",
    [
        ((4, 6), "HW", (4, 6, 1)),
        ((6, 4), "WH", (4, 6, 1)),
        ((4, 6, 3), "HWC", (4, 6, 3)),
        ((3, 6, 4), "CWH", (4, 6, 3)),
    ],
)
def test_images_take_any_layout_tensorboard_takes_and_its_float_scaling(
    tmp_path, shape, dataformats, expected
):
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("img", np.full(shape, 0.5), 0, dataformats=dataformats)
    pixels = decode_png(read_store(tmp_path)[2].images[0][5])
    assert pixels.shape[:2] == expected[:2] and (pixels == 127).all()  # 0.5 * 255, truncated


def test_another_rank_stores_nothing_and_raises_nothing(tmp_path, caplog):
    with caplog.at_level(logging.WARNING), SummaryWriter(tmp_path / "run", rank=1) as writer:
        call_every_method(writer, tmp_path / "missing.onnx")
        writer.add_image("five_channels", torch.rand(5, 4, 4), 0)
    assert not (tmp_path / "run").exists() and caplog.text == ""
