"""What ``trainer train`` builds from the command line: data, optimizer and schedule options.

Fit users hand in their own optimizer and schedule; only the CLI needs these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainer.training.config import Checked, option
from trainer.training.option_checks import above, at_least, one_of


@dataclass(frozen=True)
class RecipeConfig(Checked):
    """What ``trainer train`` builds from the command line: the data, the optimizer, the schedule."""

    dataroot: str = option(
        "",
        "image folder with train/<class>/*.png|jpg and val/<class>/...",
        group="data",
        required=True,
    )
    image_size: int | None = option(
        None,
        "resize images to this square size (default: as stored)",
        lambda v: None if v is None else at_least(1)(v),
        group="data",
        kind=int,
    )
    optimizer: str = option(
        "adam", "optimizer", one_of("adam", "sgd"), group="optimisation", choices=("adam", "sgd")
    )
    lr: float = option(0.005, "initial learning rate", above(0), group="optimisation", kind=float)
    momentum: float = option(0.9, "SGD momentum", at_least(0), group="optimisation", kind=float)
    weight_decay: float = option(0.0, "weight decay", at_least(0), group="optimisation", kind=float)
    lr_policy: str = option(
        "cosine",
        "learning-rate schedule, stepped once per epoch (cosine: to "
        "0 over the epochs; step: x LR_GAMMA every LR_DECAY_EPOCHS; plateau: "
        "x LR_GAMMA when the validation loss stalls)",
        one_of("constant", "step", "cosine", "plateau"),
        group="optimisation",
        choices=("constant", "step", "cosine", "plateau"),
    )
    lr_decay_epochs: int = option(
        5,
        "step policy: epochs between decays; plateau: patience",
        at_least(1),
        group="optimisation",
        kind=int,
    )
    lr_gamma: float = option(
        0.1, "step and plateau policies: decay factor", above(0), group="optimisation", kind=float
    )
    lr_scaling: str = option(
        "none",
        "scale --lr with the number of processes (linear: x N, sqrt: x sqrt(N))",
        one_of("none", "linear", "sqrt"),
        group="optimisation",
        choices=("none", "linear", "sqrt"),
    )

    def scaled_lr(self, world_size: int) -> float:
        """The learning rate for ``world_size`` processes under :attr:`lr_scaling`."""
        if self.lr_scaling == "linear":
            return self.lr * world_size
        if self.lr_scaling == "sqrt":
            return self.lr * math.sqrt(world_size)
        return self.lr


def build_optimizer(recipe: RecipeConfig, params: Any, lr: float) -> Any:
    """The optimizer ``--optimizer`` names."""
    import torch

    if recipe.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay
        )
    return torch.optim.Adam(params, lr=lr, weight_decay=recipe.weight_decay)


def build_scheduler(recipe: RecipeConfig, optimizer: Any, num_epochs: int) -> Any:
    """The schedule ``--lr-policy`` names (None for constant)."""
    from torch.optim import lr_scheduler

    if recipe.lr_policy == "cosine":
        return lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)
    if recipe.lr_policy == "step":
        return lr_scheduler.StepLR(
            optimizer, step_size=recipe.lr_decay_epochs, gamma=recipe.lr_gamma
        )
    if recipe.lr_policy == "plateau":
        return lr_scheduler.ReduceLROnPlateau(
            optimizer, factor=recipe.lr_gamma, patience=recipe.lr_decay_epochs
        )
    return None
