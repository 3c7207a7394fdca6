"""remote-train-monitor's import for training code: ``from remote_train_monitor import SummaryWriter``.

A name no script, module or variable of a training project is likely to have:
``trainer`` (the CLI's package) is also a user's own ``trainer.py`` and the
``trainer = Trainer(...)`` of Hugging Face scripts. The frameworks' loggers are
its submodules, each importing its framework only when imported:

* ``remote_train_monitor.lightning.MonitorLogger`` (Lightning's ``logger=``)
* ``remote_train_monitor.transformers.MonitorCallback`` (the HF ``Trainer``'s ``callbacks=``)
* ``remote_train_monitor.accelerate.replace_tensorboard()`` / ``MonitorTracker`` (Accelerate)

And for reading runs back, on a laptop without torch: ``from remote_train_monitor import Api``
(W&B's read API, offline: docs/runs-as-data.md). Each name is imported when first asked
for, so reading runs never imports torch and training never imports pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from run_core.lazy_names import LazyNames

if TYPE_CHECKING:
    from trainer.tensorboard.summary_writer import SummaryWriter
    from visualizer.api import Api

__all__ = ["Api", "SummaryWriter"]

# Each public name -> the module that owns it.
_NAMES = LazyNames(
    __name__,
    {"SummaryWriter": "trainer.tensorboard.summary_writer", "Api": "visualizer.api"},
)
__getattr__ = _NAMES.load
__dir__ = _NAMES.listed
