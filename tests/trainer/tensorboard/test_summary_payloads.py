"""A Summary value's WAV and hparams bytes: decoded, or a ValueError naming the problem."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from torch.utils.tensorboard import summary

from trainer.tensorboard.summary_payloads import hparams_data, wav_samples


def _wav(frames: bytes, channels: int = 1, width: int = 2, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(frames)
    return buffer.getvalue()


def test_torchs_audio_decodes_to_its_samples():
    sound = np.sin(np.arange(400) / 9.0) * 0.5
    data = summary.audio("a", sound, sample_rate=8000).value[0].audio.encoded_audio_string
    samples, rate = wav_samples(data)
    assert rate == 8000 and np.allclose(samples, sound, atol=1e-4)


def test_stereo_is_averaged_to_mono():
    frames = np.array([1000, 3000, -2000, 0], "<i2").tobytes()  # two frames of two channels
    samples, _ = wav_samples(_wav(frames, channels=2))
    assert (samples * np.iinfo(np.int16).max).tolist() == [2000.0, -1000.0]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"OggS" + bytes(60), "not a readable WAV file: file does not start with RIFF id"),
        (
            _wav(b"\0" * 8)[:20],
            "not a readable WAV file: it ends early",
        ),  # truncated: wave's EOFError
        (_wav(b"\0" * 8, width=1), "a WAV of 8-bit samples"),
    ],
    ids=["not-riff", "truncated", "8-bit"],
)
def test_other_bytes_are_a_value_error(data, problem):
    with pytest.raises(ValueError, match=problem):
        wav_samples(data)


def test_hparams_content_parses_or_is_a_value_error():
    _exp, start, _end = summary.hparams({"lr": 0.1}, {"acc": 1.0})
    content = start.value[0].metadata.plugin_data.content
    assert hparams_data(content).WhichOneof("data") == "session_start_info"
    with pytest.raises(ValueError, match="hparams plugin data that does not parse"):
        hparams_data(b"\xff\xff\xff")
