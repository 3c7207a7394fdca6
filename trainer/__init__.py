"""Training side: the CLI trainer, ``fit`` for your own model, and the TensorBoard-style writer.

Imports are lazy so ``import trainer`` stays cheap and torch loads only when used.
"""

from __future__ import annotations

from run_core.lazy_names import LazyNames

_NAMES = LazyNames(
    __name__,
    {
        "fit": "trainer.training.fit",
        "FitResult": "trainer.training.loop",
        "RunConfig": "trainer.training.config",
        "SummaryWriter": "trainer.tensorboard.summary_writer",
        "Recorder": "snapshot_store",
        "DiskFullError": "trainer.training.disk_full",
    },
)
__all__ = sorted(_NAMES.owners)
__getattr__ = _NAMES.load
__dir__ = _NAMES.listed
