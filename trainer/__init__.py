"""Training side: the CLI trainer, the ``fit`` runner API and the TensorBoard-style writer.

Imports are lazy so ``import trainer`` stays cheap and torch loads only when used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Recorder", "SummaryWriter", "fit"]


def __getattr__(name: str) -> Any:
    if name == "Recorder":
        from snapshot_store import Recorder

        return Recorder
    if name == "SummaryWriter":
        from .summary_writer import SummaryWriter

        return SummaryWriter
    if name == "fit":
        from .api import fit

        return fit
    raise AttributeError(f"module 'trainer' has no attribute {name!r}")
