"""Resolving --remote-transfer-cmd specs and running hooks off the training thread."""

from __future__ import annotations

import itertools
import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from snapshot_store import Recorder
from transfer_plugins import runner as runner_module
from transfer_plugins.runner import TransferRunner, TransferSpecError, resolve_hook, run_preflight


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A working directory holding user hook modules, as DeepLIIF users keep mysave.py."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    names = ("mysave", "broken", "pkg", "pkg.sub", "pkg.sub.mod")
    yield tmp_path
    for name in names:
        sys.modules.pop(name, None)


def _write(path: Path, code: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code))


def test_resolves_a_module_in_the_working_directory(user_dir):
    _write(user_dir / "mysave.py", "def save_to_s3(source_path):\n    return source_path\n")
    assert resolve_hook("mysave.save_to_s3")("x") == "x"


def test_resolves_deep_dotted_paths(user_dir):
    _write(user_dir / "pkg" / "__init__.py", "")
    _write(user_dir / "pkg" / "sub" / "__init__.py", "")
    _write(
        user_dir / "pkg" / "sub" / "mod.py",
        "class Uploader:\n    @staticmethod\n    def send(p):\n        return 1\n",
    )
    assert resolve_hook("pkg.sub.mod.Uploader.send")("x") == 1


@pytest.mark.parametrize(
    "spec, message",
    [
        ("mysave", "is not a dotted path"),
        ("my-save.fn", "is not a dotted path"),
        ("nosuchmodule.save", "no module 'nosuchmodule' found in"),
        ("mysave.nope", "has no attribute 'nope'"),
        ("mysave.VALUE", "'VALUE' is not callable"),
        ("broken.fn", "importing 'broken' failed: No module named 'not_installed_dep'"),
    ],
)
def test_bad_specs_fail_with_one_clear_message(user_dir, spec, message):
    _write(user_dir / "mysave.py", "VALUE = 3\ndef save_to_s3(p):\n    pass\n")
    _write(user_dir / "broken.py", "import not_installed_dep\ndef fn(p):\n    pass\n")
    with pytest.raises(TransferSpecError, match=message):
        resolve_hook(spec)


def test_preflight_failure_is_a_start_up_error():
    def hook(path):
        pass

    def check():
        raise RuntimeError("bucket 'b' does not exist")

    hook.preflight = check
    with pytest.raises(
        TransferSpecError, match=r"transfer check failed .*bucket 'b' does not exist"
    ):
        run_preflight(hook, "mod.hook")


def test_failing_hook_is_retried_with_backoff_and_never_raises(tmp_path):
    calls: list[float] = []

    def flaky(path):
        calls.append(time.monotonic())
        if len(calls) < 4:
            raise ConnectionError("S3 is down")

    target = tmp_path / "f"
    target.write_text("x")
    runner = TransferRunner(flaky, tmp_path, backoff=(0.05, 1.0))
    runner.submit(target)
    assert runner.close(timeout=10) == []
    assert len(calls) == 4
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert gaps == sorted(gaps)  # backing off, not hammering


def test_close_reports_files_never_sent(tmp_path):
    def down(path):
        raise ConnectionError("unreachable")

    files = [tmp_path / name for name in ("a", "b")]
    for f in files:
        f.write_text("x")
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

    target = tmp_path / "segment"
    target.write_text("x")
    runner = TransferRunner(slow, tmp_path, workers=1)
    for _ in range(1000):
        runner.submit(target, closed=False)  # returns while the hook is stuck
    assert not release.is_set()
    release.set()
    assert runner.close(timeout=10) == []
    assert 1 <= len(calls) <= 2


def test_open_files_are_rate_limited(tmp_path):
    calls: list[float] = []
    target = tmp_path / "active"
    target.write_text("x")
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

    target = tmp_path / "active"
    target.write_text("x")
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
    target = tmp_path / "f"
    target.write_text("x")
    runner = TransferRunner(
        lambda p: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())),
        tmp_path,
        nice=5,
    )
    runner.submit(target)
    runner.close()
    assert seen == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + 5)]


@pytest.mark.integration  # starts worker processes
def test_a_spec_runs_big_files_in_worker_processes_keeping_each_file_on_one(user_dir, monkeypatch):
    _write(
        user_dir / "mysave.py",
        """
        import os
        from pathlib import Path

        def save_to_s3(source_path, relative_path):
            print("hooks may print: this must not break the protocol")
            if Path(source_path).name == "bad":
                raise ConnectionError("S3 is down")
            with open(os.environ["HOOK_LOG"], "a") as log:
                log.write(f"{os.getpid()} {relative_path}\\n")
    """,
    )
    hook_log = user_dir / "calls.txt"
    os.environ["HOOK_LOG"] = str(hook_log)
    try:
        files = [user_dir / "run" / name for name in ("a", "b", "c", "bad")]
        files[0].parent.mkdir()
        for f in files:
            f.write_text("x")
        monkeypatch.setattr(runner_module, "PROCESS_MIN_BYTES", 0)  # every file is "big" here
        runner = TransferRunner.from_spec("mysave.save_to_s3", user_dir, backoff=(0.05, 0.1))
        for _ in range(2):
            for f in files:
                runner.submit(f)
            time.sleep(0.3)
        assert runner.close(timeout=1.0) == [files[3]]  # the failing one, reported
    finally:
        del os.environ["HOOK_LOG"]
    calls = [line.split() for line in hook_log.read_text().splitlines()]
    assert {rel for _, rel in calls} == {"run/a", "run/b", "run/c"}
    assert str(os.getpid()) not in {pid for pid, _ in calls}  # not in this process
    for rel in ("run/a", "run/b", "run/c"):
        assert len({pid for pid, r in calls if r == rel}) == 1  # always the same worker


@pytest.mark.integration  # starts worker processes
@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux-only")
def test_worker_processes_use_only_idle_cpu(user_dir, monkeypatch):
    _write(
        user_dir / "mysave.py",
        """
        import os, threading

        def save(source_path):
            policies = [os.sched_getscheduler(0)]
            # boto3's part threads are started inside the hook: they must inherit the class
            thread = threading.Thread(target=lambda: policies.append(os.sched_getscheduler(0)))
            thread.start()
            thread.join()
            with open(source_path + ".policy", "w") as out:
                out.write(" ".join(map(str, policies)))
    """,
    )
    target = user_dir / "latest.pth"
    target.write_text("x")
    monkeypatch.setattr(runner_module, "PROCESS_MIN_BYTES", 0)
    runner = TransferRunner.from_spec("mysave.save", user_dir)
    runner.submit(target)
    assert runner.close(timeout=10) == []
    assert (user_dir / "latest.pth.policy").read_text() == f"{os.SCHED_IDLE} {os.SCHED_IDLE}"
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # training's own class is untouched


def test_small_files_of_a_spec_stay_in_this_process(user_dir):
    _write(
        user_dir / "mysave.py", "import os\nPIDS = []\ndef save(p):\n    PIDS.append(os.getpid())\n"
    )
    target = user_dir / "status.pickle"
    target.write_text("x")
    runner = TransferRunner.from_spec("mysave.save", user_dir)
    runner.submit(target)
    assert runner.close() == []
    assert [os.getpid()] == sys.modules["mysave"].PIDS  # no worker process for a small file


def test_uploads_of_a_recording_grow_linearly_closed_segments_sent_once_when_final(tmp_path):
    # A real recorder announces its files to the runner, as the trainer wires them.
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

    files = [tmp_path / f"f{i}" for i in range(5)]
    for f in files:
        f.write_text("x")
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
