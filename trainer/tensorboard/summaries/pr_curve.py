"""Precision-recall curves: ``add_pr_curve`` (binned on the writer thread) and its raw form."""

from __future__ import annotations

from typing import Any

import numpy as np

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, private_copy

_COLUMNS = ("tp", "fp", "tn", "fn", "precision", "recall")


def pr_curve(
    tag: str, labels: Any, predictions: Any, num_thresholds: int, weights: Any | None
) -> Record:
    """Labels and predictions to be binned into ``num_thresholds`` as TensorBoard bins them."""
    raw = (
        private_copy(labels),
        private_copy(predictions),
        num_thresholds,
        None if weights is None else private_copy(weights),
    )
    return Record("pr_curve", tag, raw, encoders.encode_pr_curve)


def pr_curve_raw(tag: str, columns: tuple[Any, ...], num_thresholds: int) -> Record:
    """A curve already computed: ``columns`` are tp, fp, tn, fn, precision and recall, one
    value per threshold."""
    data: dict[str, Any] = {
        name: np.asarray(col, dtype=np.float64).reshape(-1).tolist()
        for name, col in zip(_COLUMNS, columns, strict=True)
    }
    data["num_thresholds"] = int(num_thresholds)
    return Record("pr_curve", tag, data)
