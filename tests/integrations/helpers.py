"""Helpers for the framework logger tests: run an example as a user would, read its store."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from snapshot_store import History, read_store
from tests.trainer.helpers import REPO, clean_env

EXAMPLES = REPO / "examples"


def run_example(cmd: list[str], cwd: Path, timeout: float = 280, **env: str) -> str:
    """Run ``cmd`` in ``cwd`` with the repository importable; its output, or fail with it."""
    proc = subprocess.run(
        cmd, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=timeout
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def read(store: Path) -> tuple[History, dict[str, Any], dict[str, Any]]:
    """``(history, meta, status)`` of a finished store; fails on any reader warning."""
    history, reader, update = read_store(store)
    assert reader.warnings == []
    assert update.meta is not None and update.status is not None
    return history, update.meta, update.status
