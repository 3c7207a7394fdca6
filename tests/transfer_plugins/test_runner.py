"""Running transfer hooks off the training thread: retries, coalescing, rate limits and failures.

Resolving specs, and a spec's hooks in worker processes, are in test_runner_specs.py."""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

import pytest

from snapshot_store import Recorder
from transfer_plugins import runner as runner_module
from transfer_plugins.runner import TransferRunner


def _file(path: Path) -> Path:
    """A one-byte file for a hook to send."""
    path.write_text("x")
    return path


def test_failing_hook_is_retried_with_backoff_and_never_raises(tmp_path):
    calls: list[float] = []

    def flaky(path):
        calls.append(time.monotonic())
        if len(calls) < 4:
            raise ConnectionError("S3 is down")

    target = _file(tmp_path / "f")
    runner = TransferRunner(flaky, tmp_path, backoff=(0.05, 1.0))
    runner.submit(target)
    assert runner.close(timeout=10) == []
    assert len(calls) == 4
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert gaps == sorted(gaps)  # backing off, not hammering


def test_close_reports_files_never_sent(tmp_path):
    def down(path):
        raise ConnectionError("unreachable")

    files = [_file(tmp_path / name) for name in ("a", "b")]
    runner = TransferRunner(down, tmp_path, backoff=(0.01, 0.05))
    for f in files:
        runner.submit(f)
    assert runner.close(timeout=0.3) == files


def test_submit_does_not_wait_for_a_slow_hook_and_coalesces(tmp_path):
    release = threading.Event()
    calls: list[str] = []

    def slow(path):
        calls.append(path)
        release.wait(10)

    target = _file(tmp_path / "segment")
    runner = TransferRunner(slow, tmp_path, workers=1)
    for _ in range(1000):
        runner.submit(target, closed=False)  # returns while the hook is stuck
    assert not release.is_set()
    release.set()
    assert runner.close(timeout=10) == []
    assert 1 <= len(calls) <= 2


def test_open_files_are_rate_limited(tmp_path):
    calls: list[float] = []
    target = _file(tmp_path / "active")
    runner = TransferRunner(lambda p: calls.append(time.monotonic()), tmp_path, min_interval=0.2)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        runner.submit(target, closed=False)
        time.sleep(0.005)
    runner.close()
    # At most one send per interval while open, plus the final one at close.
    assert 1 <= len(calls) <= 1.0 / 0.2 + 2
    assert all(b - a >= 0.19 for a, b in itertools.pairwise(calls[:-1]))


def test_two_argument_hooks_get_the_path_relative_to_the_root(tmp_path):
    got = []
    target = tmp_path / "exp" / "pickle" / "meta.pickle"
    target.parent.mkdir(parents=True)
    target.write_text("x")
    runner = TransferRunner(lambda src, rel: got.append((src, rel)), tmp_path)
    runner.submit(target)
    runner.close()
    assert got == [(str(target), "exp/pickle/meta.pickle")]


def test_resubmitting_a_failing_file_keeps_its_backoff(tmp_path):
    calls: list[float] = []

    def down(path):
        calls.append(time.monotonic())
        raise ConnectionError("S3 is down")

    target = _file(tmp_path / "active")
    runner = TransferRunner(down, tmp_path, backoff=(0.2, 10.0), min_interval=0.0)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # the recorder re-submits the active segment at every flush
        runner.submit(target, closed=True)
        time.sleep(0.005)
    runner.close(timeout=0)
    # Backoff 0.2, 0.4, 0.8 s: at most 4 attempts fit in one second, resubmitted or not.
    assert 1 <= len(calls) <= 4


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread nice values are Linux-only")
def test_hooks_run_at_lower_cpu_priority_than_training(tmp_path):
    seen: list[int] = []
    target = _file(tmp_path / "f")
    runner = TransferRunner(
        lambda p: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())),
        tmp_path,
        nice=5,
    )
    runner.submit(target)
    runner.close()
    assert seen == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)]


def test_uploads_of_a_recording_grow_linearly_closed_segments_sent_once_when_final(tmp_path):
    # A real recorder tells the runner of its files (on_file), as the trainer wires them.
    sends: list[tuple[str, int]] = []

    def hook(source_path, relative_path):
        sends.append((relative_path, Path(source_path).stat().st_size))

    min_interval = 0.05
    runner = TransferRunner(hook, tmp_path, min_interval=min_interval)
    store = tmp_path / "run" / "pickle"
    rec = Recorder(
        store,
        on_file=runner.submit,
        rank=0,
        flush_interval=0.01,
        segment_bytes=4096,
        segment_seconds=0.2,
    )
    for step in range(4000):
        rec.log({"loss": float(step)}, step=step)
        if step % 50 == 0:
            time.sleep(0.01)
    rec.close()
    assert runner.close(timeout=60) == []
    segments = sorted(store.glob("scalars-*.pickle"))
    assert len(segments) >= 3
    logged = sum(p.stat().st_size for p in segments)
    for seg in segments:
        sizes = [size for rel, size in sends if rel == f"run/pickle/{seg.name}"]
        assert sizes[-1] == seg.stat().st_size  # the last send is the closed, final file
        assert sizes.count(seg.stat().st_size) <= 2  # a closed segment is not sent over and over
    shipped = sum(size for rel, size in sends if "scalars-" in rel)
    # Each segment is resent at most once per min_interval while open: bytes
    # shipped are a bounded multiple of bytes logged, not quadratic in them.
    assert shipped <= logged * (0.2 / min_interval + 2)


# --- failures are said at once, summarized, and what is left is returned ------------------------


def _runner_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == runner_module.__name__]


def test_the_first_failure_is_one_warning_at_once_naming_hook_file_and_error(tmp_path, caplog):
    down = threading.Event()
    down.set()
    calls: list[str] = []

    def hook(path):
        calls.append(path)
        if down.is_set():
            raise ConnectionError("bucket unreachable")

    files = [_file(tmp_path / f"f{i}") for i in range(5)]
    caplog.set_level("WARNING", logger=runner_module.__name__)
    runner = TransferRunner(hook, tmp_path, name="mysave.save_to_s3", backoff=(0.01, 0.05))
    for f in files:
        runner.submit(f)
    deadline = time.monotonic() + 30
    while len(calls) < 20 and time.monotonic() < deadline:  # every file failed, several times
        time.sleep(0.01)
    warnings = _runner_warnings(caplog)
    assert len(calls) >= 20 and runner.failing() == 5
    assert len(warnings) == 1, warnings  # not one per file or per attempt
    assert "transfer mysave.save_to_s3 failed for" in warnings[0]
    assert str(tmp_path) in warnings[0] and "ConnectionError: bucket unreachable" in warnings[0]

    down.clear()
    assert runner.close(timeout=30) == []
    recovered = _runner_warnings(caplog)[1:]
    assert len(recovered) == 1 and "mysave.save_to_s3 works again" in recovered[0], recovered


def test_a_failure_that_goes_on_is_summarized_with_the_count_of_failing_files(tmp_path, caplog):
    caplog.set_level("WARNING", logger=runner_module.__name__)
    report = runner_module.FailureReport("mod.hook", interval=0.0)
    error = ConnectionError("down")
    report.failed(tmp_path / "a", 1, 1, error)
    report.failed(tmp_path / "b", 3, 2, error)
    first, summary = _runner_warnings(caplog)
    assert "failed for" in first and str(tmp_path / "a") in first
    assert "mod.hook: 2 file(s) failing for" in summary and "at most 3 attempts" in summary
    assert str(tmp_path / "b") in summary and "ConnectionError: down" in summary


def test_drain_stop_and_backlog_say_what_is_left(tmp_path):
    def down(path):
        raise ConnectionError("unreachable")

    small, big = tmp_path / "small", tmp_path / "big"
    small.write_bytes(b"x" * 10)
    big.write_bytes(b"x" * 5000)
    runner = TransferRunner(down, tmp_path, backoff=(0.01, 0.05))
    runner.submit(small)
    runner.submit(big, closed=False)
    assert runner.drain(0.2) is False
    assert runner.backlog() == (2, 5010)
    assert runner.stop() == [big, small] == runner.unsent
