"""``add_audio``: mono audio, made a 16-bit WAV on the writer thread."""

from __future__ import annotations

from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def audio(tag: str, snd_tensor: Any, sample_rate: Any) -> Record:
    """Mono samples in [-1, 1] at ``sample_rate``."""
    return Record("audio", tag, (private_copy(snd_tensor), sample_rate), encoders.encode_wav)
