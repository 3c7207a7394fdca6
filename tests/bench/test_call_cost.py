"""The per-call measure of the loop benchmark: blocks alternating in one real loop."""

from __future__ import annotations

import torch

from bench.bench_loop import Loop
from bench.tools import call_cost


def test_the_floor_keeps_floats_never_a_tensor_and_its_graph():
    floor = call_cost.Floor()
    weight = torch.ones(3, requires_grad=True)
    floor.add_scalar("loss/train", (weight * 2).sum(), 7)
    floor.add_scalar("loss/train", 0.5, 8)
    assert [(tag, value, step) for tag, value, step, _ in floor.kept] == [
        ("loss/train", 6.0, 7),
        ("loss/train", 0.5, 8),
    ]
    assert all(type(value) is float for _, value, _, _ in floor.kept)


def test_each_variant_is_timed_in_blocks_against_no_logging(monkeypatch):
    monkeypatch.setattr(call_cost, "BLOCKS", 3)
    monkeypatch.setattr(call_cost, "BLOCK_STEPS", 5)
    costs = call_cost.per_call(Loop("cpu"))
    assert sorted(costs) == ["floor", "ours", "step"]
    assert all(isinstance(seconds, float) for seconds in costs.values())


def test_the_row_says_what_was_timed_and_how_far_from_the_floor():
    row = call_cost.per_call_row({"ours": 2.6e-6, "floor": 1.3e-6, "step": 0.00035})
    assert row["benchmark"] == (
        "tiny MLP on cpu (0.35 ms a step), 2 add_scalar(float)/step: training thread's CPU "
        "per call, blocks of 100 steps alternating"
    )
    assert row["ours"] == "2.60 us (writer thread idle)"
    assert row["reference"] == (
        "floor 1.30 us (a method that reads the clock and keeps the value in a list)"
    )
    assert row["ratio"] == "2.0x the floor"
