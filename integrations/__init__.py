"""Loggers for the training frameworks people already use, writing our snapshot store.

One import and one argument in the user's code:

* Lightning: ``Trainer(logger=integrations.lightning.MonitorLogger("checkpoints"))``
* Hugging Face: ``Trainer(..., callbacks=[integrations.transformers.MonitorCallback()])``
* Accelerate: ``Accelerator(log_with=[integrations.accelerate.MonitorTracker("checkpoints/run")])``

Each module imports its framework; this package imports none of them. Only the
framework's process of global rank zero writes (the framework says which one).
"""
