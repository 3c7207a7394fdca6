"""``add_hparams``: one row of the hparams table (hyperparameters, redacted, and metrics)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from run_core.redaction import redact
from run_core.values import plain
from snapshot_store.format.kinds import HPARAMS_TAG
from trainer.tensorboard.summaries.record import Record, one_number


def hparam_value(value: Any) -> Any:
    """int, float, str, bool or None as stored; a one-element tensor its number, else its text."""
    if hasattr(value, "item") and hasattr(value, "shape") and int(np.prod(value.shape)) == 1:
        value = value.item()
    value = plain(value)
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def hparams_metrics(hparam_dict: Any, metric_dict: Any) -> dict[str, float]:
    """``metric_dict``'s numbers by name; TypeError unless both arguments are mappings."""
    if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
        raise TypeError("hparam_dict and metric_dict should be dictionaries")
    return {str(k): one_number(v, f"metric {k!r}") for k, v in metric_dict.items()}


def hparams_row(
    hparam_dict: Mapping[str, Any], metric_values: dict[str, float], run_name: str | None
) -> Record:
    """The row under tag ``run_name`` (default ``hparams``); a NaN metric's value is the
    scalar of that tag (see :mod:`snapshot_store.format.kinds`)."""
    hparams = redact({str(k): hparam_value(v) for k, v in hparam_dict.items()})
    tag = str(run_name) if run_name else HPARAMS_TAG
    return Record("hparams", tag, {"hparams": hparams, "metrics": metric_values})
