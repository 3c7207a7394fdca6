"""Training side: the CLI trainer, ``fit`` for your own model, and the TensorBoard-style writer.

Imports are lazy so ``import trainer`` stays cheap and torch loads only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "fit": "trainer.training.fit",
    "FitResult": "trainer.training.loop",
    "RunConfig": "trainer.training.config",
    "SummaryWriter": "trainer.tensorboard.summary_writer",
    "Recorder": "snapshot_store",
    "DiskFullError": "trainer.training.disk_full",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trainer' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
