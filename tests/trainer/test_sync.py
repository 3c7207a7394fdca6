"""python -m trainer sync: send a whole run through a hook, idempotently."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from snapshot_store import Recorder

# Every test runs `python -m trainer sync` as a process.
pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

HOOK = """
    import os, shutil
    from pathlib import Path

    def mirror(source_path, relative_path):
        target = Path(os.environ["MIRROR_DIR"]) / relative_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)
"""


def _sync(cwd: Path, *args: str, mirror: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "trainer", "sync", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MIRROR_DIR": str(mirror), "PYTHONPATH": str(REPO)},
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_sync_sends_every_file_of_a_run_and_is_idempotent(tmp_path):
    (tmp_path / "mirrorhook.py").write_text(textwrap.dedent(HOOK))
    run = tmp_path / "checkpoints" / "exp"
    with Recorder(run / "pickle", rank=0) as rec:
        rec.log({"loss": 1.0}, step=0)
    (run / "latest.pth").write_bytes(b"weights")
    mirror = tmp_path / "mirror"
    for _ in range(2):
        proc = _sync(
            tmp_path, str(run), "--remote-transfer-cmd", "mirrorhook.mirror", mirror=mirror
        )
        assert proc.returncode == 0, proc.stderr
    assert _tree(mirror / "exp") == _tree(run)
    assert "sent 4 of 4 files" in proc.stderr


def test_sync_bad_input_is_one_clear_error(tmp_path):
    mirror = tmp_path / "mirror"
    proc = _sync(tmp_path, str(tmp_path / "nope"), "--remote-transfer-cmd", "x.y", mirror=mirror)
    assert (
        proc.returncode == 2 and "run directory" in proc.stderr and "does not exist" in proc.stderr
    )
    (tmp_path / "run").mkdir()
    proc = _sync(
        tmp_path, str(tmp_path / "run"), "--remote-transfer-cmd", "nosuch.hook", mirror=mirror
    )
    assert proc.returncode == 2 and "no module 'nosuch' found" in proc.stderr
    assert "Traceback" not in proc.stderr
