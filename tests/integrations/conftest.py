"""Fixtures for the integrations' tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def wandb(tmp_path, monkeypatch):
    """The module as a script imports it, in ``tmp_path``; no run left behind."""
    import remote_train_monitor.wandb as module

    for name in (
        *("WANDB_PROJECT", "WANDB_NAME", "WANDB_DIR", "WANDB_MODE", "WANDB_REINIT"),
        *("RANK", "WORLD_SIZE"),
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield module
    module.teardown()
