"""Lightning: ``Trainer(logger=MonitorLogger("checkpoints"))`` (see :mod:`integrations.lightning`)."""

from integrations.lightning import MonitorLogger

__all__ = ["MonitorLogger"]
