"""Resolving --remote-transfer-cmd specs, and running a spec's hooks (big files in worker
processes, small ones in this one)."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

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
