"""remote-train-monitor's import for training code: ``from remote_train_monitor import SummaryWriter``.

A name no script, module or variable of a training project is likely to have:
``trainer`` (the CLI's package) is also a user's own ``trainer.py`` and the
``trainer = Trainer(...)`` of Hugging Face scripts. The frameworks' loggers are
its submodules, each importing its framework only when imported:

* ``remote_train_monitor.lightning.MonitorLogger`` (Lightning's ``logger=``)
* ``remote_train_monitor.transformers.MonitorCallback`` (the HF ``Trainer``'s ``callbacks=``)
* ``remote_train_monitor.accelerate.replace_tensorboard()`` / ``MonitorTracker`` (Accelerate)
"""

from trainer.summary_writer import SummaryWriter

__all__ = ["SummaryWriter"]
