"""Hugging Face ``Trainer``: ``callbacks=[MonitorCallback()]`` (see :mod:`integrations.transformers`)."""

from integrations.transformers import MonitorCallback

__all__ = ["MonitorCallback"]
