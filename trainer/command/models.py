"""The CLI's model: a small CNN that learns the generated shapes in minutes on a laptop CPU."""

from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    """Three conv blocks and a linear head; any input size (global average pooling).

    No batch norm on purpose: its statistics are per process under DDP, which
    would make a 2-process run differ from a 1-process run of the same global batch.
    """

    def __init__(self, num_classes: int, in_channels: int = 3, width: int = 16) -> None:
        super().__init__()

        def block(c_in: int, c_out: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2)
            )

        self.features = nn.Sequential(
            block(in_channels, width),
            block(width, 2 * width),
            block(2 * width, 4 * width),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x - 0.5))  # inputs are in [0, 1]; centre them


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-sample correctness (1.0 / 0.0), so it can be summed exactly across ranks."""
    return (outputs.argmax(dim=1) == targets).float()


class PredictionGrid:
    """The display function of the CLI's runs: inputs framed by whether they were predicted right.

    Its :attr:`image_name` is the name the grid is logged and shown under, so that the
    page says what the frames mean.
    """

    image_name = "predictions (border: green right, red wrong)"

    def __call__(
        self, inputs: torch.Tensor, targets: torch.Tensor, outputs: torch.Tensor, limit: int = 16
    ) -> torch.Tensor:
        """The first ``limit`` inputs (NCHW) framed green when predicted right, red when wrong."""
        images = inputs[:limit].detach().float().cpu().clamp(0, 1)
        correct = outputs[:limit].detach().argmax(dim=1).cpu() == targets[:limit].cpu()
        framed = torch.nn.functional.pad(images, (2, 2, 2, 2))
        green = torch.tensor([0.1, 0.9, 0.1]).view(3, 1, 1)
        red = torch.tensor([0.95, 0.1, 0.1]).view(3, 1, 1)
        inner = torch.zeros_like(framed[0], dtype=torch.bool)
        inner[:, 2:-2, 2:-2] = True
        for i, ok in enumerate(correct.tolist()):
            if framed.shape[1] == 3:
                framed[i] = torch.where(inner, framed[i], green if ok else red)
        return framed


prediction_grid = PredictionGrid()
