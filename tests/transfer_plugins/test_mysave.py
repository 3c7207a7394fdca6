"""examples/mysave.py, used the way users use it: a copy in the working directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mysave.py"
# What the runner does with `--remote-transfer-cmd mysave.save_to_s3`, in a fresh
# interpreter whose sys.path starts with the working directory.
CALL_HOOK = "import sys, mysave; [mysave.save_to_s3(p) for p in sys.argv[1:]]"


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    """A working directory holding a copy of mysave.py and a run's files."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLE, work / "mysave.py")
    store = work / "checkpoints" / "exp1" / "pickle"
    store.mkdir(parents=True)
    (store / "scalars-00000000.pickle").write_bytes(b"segment bytes")
    (store.parent / "latest.pth").write_bytes(b"checkpoint bytes")
    return work


def _call_hook(cwd: Path, *paths: Path) -> None:
    subprocess.run(
        [sys.executable, "-c", CALL_HOOK, *map(str, paths)], cwd=cwd, check=True, timeout=120
    )


@pytest.mark.parametrize("prefix, key_prefix", [(None, ""), ("runs", "runs/")])
def test_mysave_uploads_with_the_run_layout_as_key(
    s3_bucket, monkeypatch, user_dir, prefix, key_prefix
):
    monkeypatch.setenv("MY_BUCKET", s3_bucket.name)
    if prefix is None:
        monkeypatch.delenv("MY_PREFIX", raising=False)
    else:
        monkeypatch.setenv("MY_PREFIX", prefix)
    run = user_dir / "checkpoints" / "exp1"

    _call_hook(user_dir, run / "pickle" / "scalars-00000000.pickle", run / "latest.pth")

    assert s3_bucket.keys() == [
        f"{key_prefix}exp1/latest.pth",
        f"{key_prefix}exp1/pickle/scalars-00000000.pickle",
    ]
    assert s3_bucket.read(f"{key_prefix}exp1/pickle/scalars-00000000.pickle") == b"segment bytes"
    assert s3_bucket.read(f"{key_prefix}exp1/latest.pth") == b"checkpoint bytes"
