"""The whole SummaryWriter: TensorBoard's signatures, every method stored and read back."""

from __future__ import annotations

import inspect
import keyword
import logging

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TBWriter

from snapshot_store import read_store
from snapshot_store.encoders import DEFAULT_BINS
from snapshot_store.images import decode_png
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


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    plt.plot([1, 2, 3], [1, 4, 9])
    return fig


def _meta() -> list[str]:
    words = (keyword.kwlist * 10)[:100]
    return [w + str(i) for i, w in enumerate(words)]


def _mesh() -> dict:
    # add_mesh's docstring example: a tetrahedron.
    verts = torch.as_tensor([[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]], dtype=torch.float)
    colors = torch.as_tensor([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]])
    faces = torch.as_tensor([[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]], dtype=torch.int)
    return {"vertices": verts[None], "colors": colors[None], "faces": faces[None]}


def _raw_histogram() -> dict:
    # add_histogram_raw's docstring example.
    data = []
    for idx, value in enumerate(range(50)):
        data += [idx + 0.001] * value
    values = np.array(data).astype(float).reshape(-1)
    counts, limits = np.histogram(values, bins=np.array(range(52)))
    return dict(
        min=values.min(),
        max=values.max(),
        num=len(values),
        sum=values.sum(),
        sum_squares=values.dot(values),
        bucket_limits=limits[1:].tolist(),
        bucket_counts=counts.tolist(),
        global_step=0,
    )


def call_every_method(writer, onnx_file) -> None:
    """Each public method with the arguments of its docstring example (or its Shape section)."""
    writer.add_scalar("y=2x", 2 * 3, 3)
    writer.add_scalars("run_14h", {"xsinx": 1.0, "xcosx": 2.0, "tanx": 3.0}, 3)
    writer.add_tensor("x", torch.tensor([1, 2, 3]))
    writer.add_histogram("distribution centers", np.random.random(1000) + 3, 3)
    writer.add_histogram_raw("histogram_with_raw_data", **_raw_histogram())
    img = np.zeros((3, 100, 100))
    img[0] = np.arange(0, 10000).reshape(100, 100) / 10000
    writer.add_image("my_image", img, 0)
    writer.add_images("my_image_batch", np.zeros((16, 3, 100, 100)), 0)
    writer.add_image_with_boxes("boxes", img, torch.tensor([[10, 10, 40, 40]]), 0, labels=["a"])
    writer.add_figure("figure", _figure(), 0)
    writer.add_video("video", torch.rand(2, 4, 3, 16, 16), 0)
    writer.add_audio("audio", torch.rand(1, 4410) * 2 - 1, 0)
    writer.add_text("lstm", "This is an lstm", 0)
    writer.add_graph(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU()), torch.zeros(1, 4))
    writer.add_onnx_graph(str(onnx_file))
    writer.add_embedding(
        torch.randn(100, 5), metadata=_meta(), label_img=torch.rand(100, 3, 10, 32)
    )
    labels = np.random.randint(2, size=100)
    writer.add_pr_curve("pr_curve", labels, np.random.rand(100), 0)
    curve = np.linspace(1, 0, 5)
    writer.add_pr_curve_raw("pr_raw", curve * 10, curve, curve, curve, curve, curve, 0, 5)
    writer.add_custom_scalars(
        {
            "Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
            "USA": {"dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]]},
        }
    )
    writer.add_custom_scalars_multilinechart(["twse/0050", "twse/2330"], "Taiwan", "lines")
    writer.add_custom_scalars_marginchart(["dow/aaa", "dow/bbb", "dow/ccc"], "USA", "margin")
    writer.add_mesh("my_mesh", **_mesh())
    for i in range(5):
        writer.add_hparams(
            {"lr": 0.1 * i, "bsize": i}, {"hparam/accuracy": 10 * i}, run_name=f"r{i}"
        )
    writer.flush()
    assert writer.get_logdir()


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
