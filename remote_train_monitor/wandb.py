"""``import remote_train_monitor.wandb as wandb``: a W&B training script, one import changed.

The implementation is :mod:`integrations.wandb`; this module forwards every name to it,
so ``wandb.run``, ``wandb.config`` and ``wandb.summary`` follow the current run.
"""

from __future__ import annotations

from typing import Any

import integrations.wandb as _impl

__all__ = _impl.__all__


def __getattr__(name: str) -> Any:
    return getattr(_impl, name)


def __dir__() -> list[str]:
    return sorted({*__all__, "run", "config", "summary", "join", "UsageError"})
