"""Histograms: ``add_histogram`` (bucketed on the writer thread) and ``add_histogram_raw``."""

from __future__ import annotations

from typing import Any

import numpy as np

from snapshot_store.write import encoders
from trainer.tensorboard.summaries.record import Record, one_number, private_copy


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None) -> Record:
    """``values`` to be bucketed as TensorBoard buckets them (``bins``: "tensorflow", a
    numpy rule, a count or the edges); an unknown numpy rule raises here, not later."""
    if not isinstance(bins, (str, int)):
        bins = np.array(bins, dtype=np.float64)
    elif isinstance(bins, str) and bins != "tensorflow":
        np.histogram_bin_edges(np.zeros(1), bins)
    return Record(
        "histogram", tag, (private_copy(values), bins, max_bins), encoders.encode_histogram
    )


def histogram_raw(
    tag: str,
    min: Any,
    max: Any,
    num: Any,
    sum: Any,
    sum_squares: Any,
    bucket_limits: Any,
    bucket_counts: Any,
) -> Record:
    """A histogram already bucketed: ``bucket_limits`` are right edges, one per count."""
    limits = [one_number(v, "a bucket limit") for v in bucket_limits]
    counts = [one_number(v, "a bucket count") for v in bucket_counts]
    if len(limits) != len(counts):
        raise ValueError(f"{len(limits)} bucket limits for {len(counts)} counts")
    data = {
        "min": one_number(min, "min"),
        "max": one_number(max, "max"),
        "num": one_number(num, "num"),
        "sum": one_number(sum, "sum"),
        "sum_squares": one_number(sum_squares, "sum_squares"),
        "limits": limits,
        "counts": counts,
    }
    return Record("histogram", tag, data)
