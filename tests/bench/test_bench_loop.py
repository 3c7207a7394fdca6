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


def test_each_kind_is_read_against_its_own_reference_with_the_writer_threads_share():
    from bench.bench_loop import READ_LOSS, _loop_rows

    rounds = 5
    results = {
        "none": [(1.002, 1e-7)] * rounds,
        READ_LOSS: [(1.006, 2e-6)] * rounds,
        "ours, float": [(1.017, 3.6e-6, 0.9e-6)] * rounds,
        "TensorBoard, float": [(1.25, 80e-6, 1e-6)] * rounds,
        "ours, tensor": [(1.03, 5e-6, 0.9e-6)] * rounds,
        "TensorBoard, tensor": [(1.3, 90e-6, 1e-6)] * rounds,
    }
    rows = {row["benchmark"]: row for row in _loop_rows("cpu", 2, results, 0.00035)}
    float_row = next(row for name, row in rows.items() if "add_scalar(float)" in name)
    tensor_row = next(row for name, row in rows.items() if "add_scalar(tensor)" in name)
    read_row = next(row for name, row in rows.items() if "reading its loss" in name)
    assert float_row["ratio"] == "vs a loop reading the loss"
    assert tensor_row["ratio"] == "vs the bare loop"
    assert float_row["ours"] == "1.017x, 3.6 us (0.9 us)"
    assert float_row["met"] is False and tensor_row["met"] is False
    assert read_row["ours"] == "1.006x, 2.0 us a step"
    assert all("(0.35 ms a step)" in name for name in rows)


def test_cuda_runs_are_sized_by_time_and_cpu_runs_by_count():
    from bench.bench_loop import CUDA_SECONDS, MIN_SCALARS, ROUNDS, run_size

    # A CUDA step of 4 ms: runs of about 1.2 s, every round within the budget.
    steps, rounds = run_size("cuda", 2, 0.004, 2)
    assert steps == 300 and 3 <= rounds <= ROUNDS
    assert rounds * 10 * steps * 0.004 <= max(CUDA_SECONDS, 3 * 10 * steps * 0.004)
    # A slow GPU still gets the three rounds a median needs.
    assert run_size("cuda", 20, 0.5, 2)[1] == 3
    # The CPU keeps its count: at least MIN_SCALARS scalars a run, every round.
    steps, rounds = run_size("cpu", 2, 0.00035, 2)
    assert steps * 2 >= MIN_SCALARS and rounds == ROUNDS
