"""The part of a run that a checkpoint carries and a resumed run continues from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

# What trainer.fit returns of the run's series: "group/name" -> [(step, epoch, value)], plain lists
# (the store's History is the reader's, with wall times).
FitHistory = dict[str, list[tuple[int, float, float]]]


@dataclass
class RunState:
    """Progress, early-stopping bookkeeping and the recorded history of one run."""

    epoch: int = 0  # epochs completed
    step: int = 0  # optimizer steps taken: the x axis of every plot
    batch_in_epoch: int = 0  # batches done in the current epoch (> 0 only mid-epoch)
    best_value: float | None = None
    best_epoch: int | None = None  # 1-based epoch that gave best_value
    bad_epochs: int = 0
    history: FitHistory = field(default_factory=dict)

    def record(self, group: str, values: dict[str, float], epoch: float) -> None:
        """Keep ``values`` of ``group`` at the current step (returned in :class:`FitResult`)."""
        for name, value in values.items():
            self.history.setdefault(f"{group}/{name}", []).append((self.step, epoch, float(value)))

    def observe(self, epoch: int, value: float, mode: str, min_delta: float) -> bool:
        """Count a validation score of ``epoch`` (0-based); True when it is the best so far."""
        if self.best_value is None:
            better = True
        elif mode == "min":
            better = value < self.best_value - min_delta
        else:
            better = value > self.best_value + min_delta
        if better:
            self.best_value, self.best_epoch, self.bad_epochs = value, epoch + 1, 0
        else:
            self.bad_epochs += 1
        return better

    def should_stop(self, patience: int | None) -> bool:
        """Early stopping: ``patience`` epochs in a row without improvement."""
        return bool(patience) and self.bad_epochs >= (patience or 0)

    def to_checkpoint(self) -> dict[str, Any]:
        """The state as checkpoint entries (plain values, loadable with ``weights_only``)."""
        return {
            "epoch": self.epoch,
            "batch_in_epoch": self.batch_in_epoch,
            "step": self.step,
            "early_stopping": {
                "best_value": self.best_value,
                "best_epoch": self.best_epoch,
                "bad_epochs": self.bad_epochs,
            },
            "history": {k: [list(p) for p in v] for k, v in self.history.items()},
        }

    @classmethod
    def from_checkpoint(cls, checkpoint: dict[str, Any], *, mid_epoch: bool) -> RunState:
        """The state a checkpoint saved; ``mid_epoch=False`` restarts the epoch from its start."""
        stopping = checkpoint["early_stopping"]
        return cls(
            epoch=checkpoint["epoch"],
            step=checkpoint["step"],
            batch_in_epoch=checkpoint["batch_in_epoch"] if mid_epoch else 0,
            best_value=stopping["best_value"],
            best_epoch=stopping["best_epoch"],
            bad_epochs=stopping["bad_epochs"],
            history={
                k: [(int(s), float(e), float(v)) for s, e, v in points]
                for k, points in checkpoint["history"].items()
            },
        )


@dataclass
class FitResult:
    """What a finished (or early-stopped) run leaves: identical on every rank but the model device."""

    model: nn.Module
    history: FitHistory
    best_value: float | None
    best_epoch: int | None  # 1-based number of the epoch that gave best_value
    best_checkpoint: Path | None
    latest_checkpoint: Path | None
    run_dir: Path
    epochs_completed: int
    global_step: int
    stopped_early: bool = False
    unsent: tuple[Path, ...] = ()  # files the transfer hook could not send (``trainer sync``)

    def values(self, key: str) -> list[float]:
        """The recorded values of ``"group/name"`` (e.g. ``"val/loss"``) in step order."""
        return [value for _, _, value in self.history.get(key, [])]
