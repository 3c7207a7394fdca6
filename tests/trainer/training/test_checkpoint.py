"""trainer.training.checkpoint: RNG states and plain options survive torch.load(weights_only=True)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import torch

from run_core.values import plain
from trainer.training import checkpoint


def _draws() -> tuple:
    return (
        torch.rand(3).tolist(),
        np.random.rand(3).tolist(),
        [random.random() for _ in range(3)],
        np.random.randn(),
    )


def test_rng_state_round_trips_through_a_weights_only_load(tmp_path):
    checkpoint.seed_everything(7)
    np.random.randn()  # leave a cached gaussian in numpy's state
    torch.save({"rng": checkpoint.rng_state()}, tmp_path / "c.pth")
    expected = _draws()
    checkpoint.seed_everything(99)
    checkpoint.set_rng_state(checkpoint.load(tmp_path / "c.pth")["rng"])
    assert _draws() == expected


def test_plain_makes_options_weights_only_loadable(tmp_path):
    options = {
        "dataroot": Path("/data"),
        "gpu_ids": (0, 1),
        "remote": True,
        "lr": 0.1,
        "name": None,
        "nested": {"x": {1, 2}},
        "obj": object,
    }
    torch.save(plain(options), tmp_path / "o.pth")
    loaded = checkpoint.load(tmp_path / "o.pth")
    assert loaded["dataroot"] == "/data" and loaded["gpu_ids"] == [0, 1]
    assert loaded["nested"] == {"x": [1, 2]} and isinstance(loaded["obj"], str)
