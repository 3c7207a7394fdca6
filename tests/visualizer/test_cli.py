"""The command lines, run as the user runs them: exit codes, messages, CSV export, no torch."""

from __future__ import annotations

import csv
import io
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from snapshot_store import Recorder
from snapshot_store.reader import read_store
from tests.fixtures.net import free_port

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60

# Makes `import torch` fail in the child, as on a laptop without torch.
BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"No module named {name!r} (blocked: this test runs without torch)")
        return None
sys.meta_path.insert(0, _NoTorch())
try:
    import torch
except ImportError:
    pass
else:
    raise SystemExit("the torch blocker does not work")
"""


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, **(env or {})},
    )


def make_store(store: Path, steps: int = 30) -> None:
    with Recorder(store, flush_interval=0.05, handle_signals=False) as rec:
        for step in range(steps):
            rec.log({"loss": 1.0 / (step + 1), "acc": step / steps}, step=step, epoch=step / 10)
            rec.log({"lr": 0.1}, step=step, group="lr")
        rec.log({"loss": float("nan")}, step=steps, epoch=steps / 10)


def test_once_with_a_missing_directory_exits_nonzero_with_a_clear_message(tmp_path):
    missing = tmp_path / "no" / "such" / "pickle"
    result = run(
        "run_visualizer_local.py", "--pickle_dir", str(missing), "--once", "--no-start-server"
    )
    assert result.returncode == 1
    assert "no snapshot store found" in result.stderr and str(missing) in result.stderr


def test_export_prints_every_scalar_as_csv(tmp_path):
    store = tmp_path / "myrun" / "pickle"
    make_store(store)
    result = run("-m", "visualizer", "export", "--pickle_dir", str(store))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {"group", "tag", "step", "epoch", "wall_time", "value"} <= set(rows[0])
    history, _, _ = read_store(store)
    for group, name in history.keys():
        steps, epochs, _, values = history.series((group, name))
        mine = [r for r in rows if r["tag"] == f"{group}/{name}"]
        assert [int(r["step"]) for r in mine] == steps
        got = [float(r["value"]) for r in mine]
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, values))
        assert [float(r["epoch"]) for r in mine] == epochs
    assert len(rows) == history.points
    assert {r["run"] for r in rows} == {"myrun"}


def test_export_of_a_missing_directory_fails(tmp_path):
    result = run("-m", "visualizer", "export", "--pickle-dir", str(tmp_path / "nothing"))
    assert result.returncode == 1 and "no snapshot store found" in result.stderr


def test_runs_without_torch(tmp_path, visdom_server, reader):
    """The whole follow path (import, read, draw) with `import torch` failing."""
    store = tmp_path / "notorch-run" / "pickle"
    make_store(store)
    code = (
        BLOCK_TORCH
        + f"""
from visualizer.cli import main
rc = main(["--pickle-dir", {str(store)!r}, "--port", "{visdom_server.port}", "--once", "--no-start-server"])
assert "torch" not in sys.modules
sys.exit(rc)
"""
    )
    result = run("-c", code)
    assert result.returncode == 0, result.stderr
    assert f"visdom: http://127.0.0.1:{visdom_server.port}" in result.stdout
    steps, values = reader.traces("notorch-run", "train")["loss"]
    assert steps == list(range(31)) and values[-1] is None  # NaN drawn as a gap


def test_console_script_once_into_a_running_server(tmp_path, visdom_server, reader):
    store = tmp_path / "script-run" / "pickle"
    make_store(store, steps=5)
    script = Path(sys.executable).parent / "run-visualizer"
    result = subprocess.run(
        [
            str(script),
            "--pickle_dir",
            str(store),
            "--port",
            str(visdom_server.port),
            "--once",
            "--env",
            "script-env",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr
    assert reader.traces("script-env", "lr")["lr"] == ([0, 1, 2, 3, 4], [0.1] * 5)


def test_port_held_by_something_else_is_a_clear_error(tmp_path):
    store = tmp_path / "r" / "pickle"
    make_store(store, steps=2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = run(
            "run_visualizer_local.py", "--pickle_dir", str(store), "--port", str(port), "--once"
        )
    assert result.returncode == 2
    assert f"port {port}" in result.stderr and "not visdom" in result.stderr


def test_no_start_server_once_without_a_server_fails(tmp_path):
    store = tmp_path / "r" / "pickle"
    make_store(store, steps=2)
    result = run(
        "run_visualizer_local.py",
        "--pickle_dir",
        str(store),
        "--port",
        str(free_port()),
        "--once",
        "--no-start-server",
    )
    assert result.returncode == 2 and "no visdom server answers" in result.stderr


@pytest.mark.parametrize("bad", [["--max-points", "2"], ["--poll-interval", "0"]])
def test_bad_options_are_refused(tmp_path, bad):
    result = run("run_visualizer_local.py", "--pickle_dir", str(tmp_path), "--once", *bad)
    assert result.returncode != 0 and result.stderr
