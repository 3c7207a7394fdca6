"""Plotly traces: the baseline run's lines are dashed, every other run's solid."""

from __future__ import annotations

import numpy as np

from visualizer.model.traces import BASELINE_COLOR, line


def test_the_baseline_color_draws_a_dashed_line():
    x = y = np.arange(3.0)
    assert line("base", x, y, BASELINE_COLOR, True)["line"] == {
        "color": BASELINE_COLOR, "width": 1.5, "dash": "dash"}  # fmt: skip
    assert "dash" not in line("run", x, y, "#1f77b4", True)["line"]
