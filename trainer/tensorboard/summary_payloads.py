"""The bytes a TensorBoard ``Summary`` value carries, decoded: WAV and hparams plugin data.

A summary handed to ``file_writer.add_summary`` may carry anything (another
program built it, or a script built it wrong); torch's own writer stores the
bytes unread. Each decoder here (and :func:`snapshot_store.format.images.decode_png`
for PNG) turns what its library raises on bad bytes into a ValueError naming
the problem, so the file writer skips that one value with a warning and keeps
the rest of the summary.
"""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np


def wav_samples(data: bytes) -> tuple[np.ndarray, int]:
    """Mono float samples in [-1, 1] and the rate of 16-bit PCM WAV bytes (channels averaged)."""
    try:
        with wave.open(io.BytesIO(data)) as wav:
            width, channels, rate = wav.getsampwidth(), wav.getnchannels(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as err:
        raise ValueError(f"not a readable WAV file: {str(err) or 'it ends early'}") from err
    if width != 2:
        raise ValueError(f"a WAV of {8 * width}-bit samples; expected 16-bit")
    samples = np.frombuffer(frames, "<i2")[: len(frames) // 2 // channels * channels]
    mono = samples.reshape(-1, channels).mean(axis=1)
    return mono / np.iinfo(np.int16).max, rate


def hparams_data(content: bytes) -> Any:
    """The ``HParamsPluginData`` message of an hparams summary's plugin content."""
    # Only reached with a summary built with tensorboard's classes, so it is installed.
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
    from tensorboard.plugins.hparams import plugin_data_pb2  # type: ignore[import-untyped]

    try:
        return plugin_data_pb2.HParamsPluginData.FromString(content)
    except DecodeError as err:
        raise ValueError(f"hparams plugin data that does not parse: {err}") from err
