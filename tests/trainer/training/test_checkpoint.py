"""trainer.training.checkpoint: RNG states and plain options survive torch.load(weights_only=True)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
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


class _InterruptedFile:
    """A file that takes Ctrl-C on its third write, as a signal landing mid-save does."""

    def __init__(self, f):
        self.f, self.writes = f, 0

    def write(self, data):
        self.writes += 1
        if self.writes == 3:
            raise KeyboardInterrupt
        return self.f.write(data)

    def flush(self):
        self.f.flush()


def test_an_interrupt_mid_save_stays_an_interrupt_and_keeps_the_last_checkpoint(
    tmp_path, monkeypatch
):
    """torch's zip writer raises its own RuntimeError while closing; the interrupt wins."""
    path = tmp_path / "latest.pth"
    checkpoint.save_whole({"epoch": 1}, path)
    real_save = torch.save
    monkeypatch.setattr(torch, "save", lambda obj, f: real_save(obj, _InterruptedFile(f)))
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save_whole({"weights": torch.zeros(100_000), "epoch": 2}, path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pth"]
    assert torch.load(path, weights_only=True) == {"epoch": 1}
