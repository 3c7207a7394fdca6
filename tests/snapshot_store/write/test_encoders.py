"""Writer-thread encoders: the numbers TensorBoard computes, and clear errors for bad input."""

from __future__ import annotations

import io
import re
import wave

import numpy as np
import pytest
from PIL import Image

from snapshot_store.format import schema
from snapshot_store.write import encoders


def _valid(kind: str, data: dict) -> dict:
    assert schema.record_problem((kind, "tag", 0, 1.0, data)) is None
    return data


def test_pr_curve_is_tensorboards_compute_curve():
    from torch.utils.tensorboard.summary import compute_curve

    rng = np.random.default_rng(0)
    labels, predictions = rng.integers(0, 2, 500), rng.random(500)
    ours = _valid("pr_curve", encoders.encode_pr_curve((labels, predictions, 127, None)))
    theirs = compute_curve(labels, predictions, num_thresholds=127)
    for row, name in enumerate(("tp", "fp", "tn", "fn", "precision", "recall")):
        assert ours[name] == pytest.approx(theirs[row].tolist())


def test_wav_is_16_bit_mono_clipped():
    data = _valid("audio", encoders.encode_wav((np.array([[0.0, 0.5, 2.0, -3.0]]), 8000)))
    with wave.open(io.BytesIO(data["wav"])) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 8000)
        samples = np.frombuffer(wav.readframes(4), "<i2").tolist()
    assert samples == [0, 16383, 32767, -32767]


def test_gif_has_one_frame_per_time_step():
    data = _valid("video", encoders.encode_gif((np.random.rand(2, 5, 3, 8, 8), 10)))
    with Image.open(io.BytesIO(data["gif"])) as gif:
        assert gif.format == "GIF" and gif.n_frames == 5


def test_an_embeddings_view_is_its_two_principal_components():
    rng = np.random.default_rng(1)
    mat = np.outer(rng.normal(size=50), [1.0, 2.0, 0.0]) + 1e-3 * rng.normal(size=(50, 3))
    data = _valid("embedding", encoders.encode_embedding((mat, None, [], None)))
    assert np.var(data["x"]) > 1000 * np.var(data["y"])  # the spread lies along the first axis
    assert np.array_equal(np.frombuffer(data["values"], data["dtype"]).reshape(50, 3), mat)


def test_an_embeddings_bytes_must_be_its_shape():
    data = encoders.encode_embedding((np.ones((2, 3), np.float32), ["a", "b"], ["a", "b"], None))
    assert schema.record_problem(("embedding", "e", 0, 1.0, data)) is None
    assert "holds 20 bytes" in schema.record_problem(
        ("embedding", "e", 0, 1.0, {**data, "values": data["values"][:20]})
    )
    assert "wrong type" in schema.record_problem(("embedding", "e", 0, 1.0, {**data, "dtype": "O"}))


@pytest.mark.parametrize(
    "call, why",
    [
        (
            lambda: encoders.encode_histogram((np.array([1.0, np.inf]), "tensorflow", None)),
            "NaN or infinity",
        ),
        (lambda: encoders.encode_histogram((np.array([]), "tensorflow", None)), "empty"),
        (
            lambda: encoders.encode_histogram((np.array(["a"]), "tensorflow", None)),
            "must be numbers",
        ),
        (lambda: encoders.encode_pr_curve((np.ones(3), np.ones(4), 127, None)), "3 labels for 4"),
        (lambda: encoders.encode_gif((np.ones((2, 3, 8, 8)), 4)), "(N, T, C, H, W)"),
        (
            lambda: encoders.encode_embedding((np.ones((3, 2)), ["a"], [], None)),
            "1 metadata labels for 3",
        ),
        (
            lambda: encoders.encode_embedding((np.ones((3, 2)), None, [], np.ones((2, 3, 4, 4)))),
            "2 label",
        ),
        (lambda: encoders.encode_embedding((np.ones(3), None, [], None)), "expected (N, D)"),
        (
            lambda: encoders.encode_mesh((np.ones((1, 3, 3)), np.array([[[0, 1, 5]]]), None)),
            "do not index",
        ),
        (
            lambda: encoders.encode_boxes((np.ones((3, 4, 4)), np.ones((2, 4)), "CHW", 1, ["a"])),
            "1 labels for 2",
        ),
    ],
)
def test_bad_input_raises_a_value_error_saying_what_is_wrong(call, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        call()


def test_boxes_are_drawn_in_red():
    png = encoders.encode_boxes((np.zeros((3, 10, 10)), np.array([[1, 1, 8, 8]]), "CHW", 1, None))
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert pixels[1, 4].tolist() == [255, 0, 0] and pixels[4, 4].tolist() == [0, 0, 0]
