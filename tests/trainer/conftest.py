"""Fixtures for the trainer tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainer.command.data import make_dataset


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 classes of 16×16 shapes: 16 training and 4 validation images per class."""
    root = tmp_path_factory.mktemp("tiny_dataset")
    make_dataset(root, classes=3, train_per_class=16, val_per_class=4, image_size=16, seed=1)
    return root


@pytest.fixture(autouse=True, scope="package")
def one_thread():
    """One intra-op thread: on 2 busy cores, a second one only adds waiting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
