"""``add_video``: a video batch, made an animated GIF on the writer thread."""

from __future__ import annotations

from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy


def video(tag: str, vid_tensor: Any, fps: Any) -> Record:
    """A video batch (N, T, C, H, W), tiled as TensorBoard tiles it, at ``fps``."""
    return Record("video", tag, (private_copy(vid_tensor), fps), encoders.encode_gif)
