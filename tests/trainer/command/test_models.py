"""trainer.command.models: the small CNN, the exact per-sample accuracy and the prediction grid."""

from __future__ import annotations

import torch

from trainer.command.models import SmallCNN, accuracy, prediction_grid


def test_small_cnn_takes_any_image_size():
    model = SmallCNN(num_classes=5)
    for size in (16, 32, 40):
        assert model(torch.rand(2, 3, size, size)).shape == (2, 5)


def test_accuracy_is_per_sample_so_sums_are_exact():
    outputs = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]])
    assert accuracy(outputs, torch.tensor([0, 0, 0])).tolist() == [1.0, 0.0, 1.0]


def test_prediction_grid_frames_right_green_and_wrong_red():
    inputs = torch.full((3, 3, 8, 8), 0.5)
    outputs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    grid = prediction_grid(inputs, torch.tensor([0, 0, 0]), outputs)
    assert grid.shape == (3, 3, 12, 12)
    assert grid[0, 1, 0, 0] > 0.8 and grid[0, 0, 0, 0] < 0.2  # green frame: right
    assert grid[1, 0, 0, 0] > 0.8 and grid[1, 1, 0, 0] < 0.2  # red frame: wrong
    assert torch.equal(grid[:, :, 2:-2, 2:-2], inputs)


def test_prediction_grid_is_named_with_what_its_frames_mean():
    name = prediction_grid.image_name
    assert "green" in name and "red" in name and name.startswith("predictions")
