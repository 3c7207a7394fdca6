"""Texts: ``add_text``, and ``add_onnx_graph`` stored as text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trainer.tensorboard.summaries.record import Record


def text(tag: str, text_string: Any) -> Record:
    """A text (Markdown in TensorBoard; shown as text)."""
    if not isinstance(text_string, str):
        raise TypeError(f"text must be str, not {type(text_string).__name__}")
    return Record("text", tag, {"text": text_string})


def onnx_graph(prototxt: str | os.PathLike[str]) -> Record:
    """Which ONNX file was given, and its size, under tag ``onnx_graph`` (OSError if none)."""
    path = Path(os.fspath(prototxt))
    text = f"ONNX graph {path} ({path.stat().st_size:,} bytes)"
    return Record("text", "onnx_graph", {"text": text})
