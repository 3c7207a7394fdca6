"""Loggers for the training frameworks people already use, writing our snapshot store.

One line in the user's code (imported from :mod:`remote_train_monitor`, docs/integrations.md):

* Lightning: ``Trainer(logger=MonitorLogger("checkpoints"))``
* Hugging Face: ``Trainer(..., callbacks=[MonitorCallback()])``
* Accelerate: ``replace_tensorboard()``, then ``Accelerator(log_with="tensorboard", project_dir=...)``

Each module imports its framework; this package imports none of them. Only the
framework's process of global rank zero writes (the framework says which one).
"""
