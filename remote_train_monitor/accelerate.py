"""Accelerate: ``replace_tensorboard()`` before the ``Accelerator`` (see :mod:`integrations.accelerate`)."""

from integrations.accelerate import MonitorTracker, replace_tensorboard

__all__ = ["MonitorTracker", "replace_tensorboard"]
