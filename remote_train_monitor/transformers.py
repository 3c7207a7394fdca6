"""Hugging Face ``Trainer``: ``callbacks=[MonitorCallback()]``, or ``replace_wandb()`` and
``report_to="wandb"`` (see :mod:`integrations.transformers`)."""

from integrations.transformers import MonitorCallback, replace_wandb

__all__ = ["MonitorCallback", "replace_wandb"]
