"""The loop benchmark's verdict on the 2-tag targets."""

from __future__ import annotations

from bench.bench_loop import _verdict


def test_a_target_inside_the_noise_is_not_resolved():
    # Two runs without logging 7% apart can not show a 1% target, met or missed.
    assert _verdict(0.990, -1.1, 0.071, 8.9) == "not resolved: noise 0.071, 8.9 us"
    assert _verdict(1.005, 1.0, 0.004, 3.3).startswith("not resolved")


def test_a_resolved_target_is_met_or_missed():
    assert _verdict(1.005, 1.0, 0.004, 0.5) is True
    assert _verdict(1.020, 1.0, 0.004, 0.5) is False
    assert _verdict(1.005, 2.5, 0.004, 0.5) is False
