"""The command lines as users run them: exit codes, messages, help, CSV export, no torch.

Tests that run a command in a process of its own are integration tests; the
rest call the entry points in this process and need no server.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from run_core import atomic
from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from snapshot_store.read.store_reader import read_store
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import reap
from visualizer import cli, options
from visualizer.__main__ import main as python_m_visualizer

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
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(steps):
            rec.log({"loss": 1.0 / (step + 1), "acc": step / steps}, step=step, epoch=step / 10)
            rec.log({"lr": 0.1}, step=step, group="lr")
        rec.log({"loss": float("nan")}, step=steps, epoch=steps / 10)


def exit_status(call) -> int:
    """The status of an entry point that may also end through SystemExit (argparse does)."""
    try:
        return call()
    except SystemExit as exit:
        return exit.code


# --- in this process, no server --------------------------------------------------------


def test_help_lists_every_option_with_help_and_the_export_command(capsys):
    assert exit_status(lambda: python_m_visualizer(["--help"])) == ExitCode.OK
    text = capsys.readouterr().out
    assert "export" in text and "--pickle-dir DIR, --pickle_dir DIR" in text
    for option in options.build_parser()._actions:
        assert option.help, f"{option.option_strings} has no help"
        if (option.help % dict(vars(option), prog="x")).count("default") > 1:
            raise AssertionError(f"{option.option_strings}: default stated twice: {option.help}")


@pytest.mark.parametrize(
    "bad",
    [
        ["--max-points", "2"],
        ["--max-points", "1e3"],
        ["--poll-interval", "0"],
        ["--poll-interval", "-1"],
        ["--poll-interval", "nan"],
        ["--poll-interval", "inf"],
        ["--server", "https://visdom.example"],
        ["--server", "http://host:9000", "--port", "9001"],
        ["--parent-pid", "0"],
        ["--runs", "lr-(0.1"],
        ["--runs", "*"],
        ["--sort-by", ""],
        ["--no-such-option"],
    ],
)
def test_bad_options_are_usage_errors(tmp_path, capsys, bad):
    assert (
        exit_status(lambda: cli.main(["--pickle-dir", str(tmp_path), "--once", *bad]))
        == ExitCode.USAGE
    )
    out, err = capsys.readouterr()
    assert out == ""  # refused before any server started: no `visdom: <url>` line
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and bad[0] in errors[0], err


def test_once_with_a_missing_directory_has_no_data(tmp_path, caplog):
    missing = tmp_path / "no" / "such" / "pickle"
    status = cli.main(["--pickle_dir", str(missing), "--once", "--no-start-server"])
    assert status == ExitCode.NO_DATA
    assert "no snapshot store found" in caplog.text and str(missing) in caplog.text


def test_once_when_runs_selects_none_of_the_runs_found_has_no_data(tmp_path, caplog):
    for name in ("lr-0.1", "lr-0.01"):
        make_store(tmp_path / name / "pickle", steps=2)
    status = cli.main(
        ["--pickle-dir", str(tmp_path), "--once", "--no-start-server", "--runs", "^bs-"]
    )
    assert status == ExitCode.NO_DATA
    assert f"no run at {tmp_path} matches --runs '^bs-' (found: lr-0.01, lr-0.1)" in caplog.text


def test_no_start_server_once_without_a_server_is_unavailable(tmp_path, caplog):
    store = tmp_path / "r" / "pickle"
    make_store(store, steps=2)
    caplog.set_level(logging.ERROR)
    status = cli.main(
        ["--pickle-dir", str(store), "--port", str(free_port()), "--once", "--no-start-server"]
    )
    assert status == ExitCode.UNAVAILABLE and "no visdom server answers" in caplog.text


def test_export_of_a_missing_directory_has_no_data(tmp_path, caplog):
    status = python_m_visualizer(["export", "--pickle-dir", str(tmp_path / "nothing")])
    assert status == ExitCode.NO_DATA and "no snapshot store found" in caplog.text


# --- in a process of their own -----------------------------------------------------------


@pytest.mark.integration
def test_export_prints_every_scalar_as_csv(tmp_path):
    store = tmp_path / "myrun" / "pickle"
    make_store(store)
    result = run("-m", "visualizer", "export", "--pickle-dir", str(store))
    assert result.returncode == ExitCode.OK, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {"group", "tag", "step", "epoch", "wall_time", "value"} <= set(rows[0])
    history, _, _ = read_store(store)
    series_keys = history.keys()  # a list: History is no dict
    for group, name in series_keys:
        steps, epochs, _, values = history.series((group, name))
        mine = [r for r in rows if r["tag"] == f"{group}/{name}"]
        assert [int(r["step"]) for r in mine] == steps
        got = [float(r["value"]) for r in mine]
        assert all(
            a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, values, strict=True)
        )
        assert [float(r["epoch"]) for r in mine] == epochs
    assert len(rows) == history.points
    assert {r["run"] for r in rows} == {"myrun"}


def test_runs_without_torch(tmp_path, visdom_server, reader):
    """The whole follow path (import, read, draw) with `import torch` failing."""
    store = tmp_path / "notorch-run" / "pickle"
    make_store(store)
    code = (
        BLOCK_TORCH
        + f"""
from visualizer.cli import main
rc = main(["--pickle-dir", {str(store)!r}, "--port", "{visdom_server.endpoint.port}", "--once", "--no-start-server"])
assert "torch" not in sys.modules
sys.exit(rc)
"""
    )
    result = run("-c", code)
    assert result.returncode == ExitCode.OK, result.stderr
    assert result.stdout == f"visdom: {visdom_server.url}/env/notorch-run\n"
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
            "--server",
            visdom_server.url,
            "--once",
            "--env",
            "script-env",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        # The script imports the installed package: make that this source tree.
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
        },
    )
    assert result.returncode == ExitCode.OK, result.stderr
    assert reader.traces("script-env", "lr")["lr"] == ([0, 1, 2, 3, 4], [0.1] * 5)


def test_once_with_a_malformed_status_draws_the_run(tmp_path, visdom_server, reader):
    """A status.pickle with NaN, inf, strings and lists for numbers: no traceback, dashes shown."""
    store = tmp_path / "odd-status" / "pickle"
    make_store(store, steps=3)
    status = {
        "state": "running",
        "step": "three",
        "total_steps": float("inf"),
        "epoch": float("nan"),
        "updated": [1, 2],
        "start_time": float("nan"),
        "heartbeat_seconds": "5",
    }
    atomic.write_atomic(store / fmt.STATUS_FILE, fmt.encode_document(status))
    result = run(
        "run_visualizer_local.py", "--pickle-dir", str(store), "--server", visdom_server.url,
        "--once", "--no-start-server",
    )  # fmt: skip
    assert result.returncode == ExitCode.OK, result.stderr
    assert "Traceback" not in result.stderr
    panel = reader.windows("odd-status")["status"]["content"]
    assert "RUNNING" in panel and ">step</td><td>-</td>" in panel, panel
    assert "nan" not in panel and "inf" not in panel


@pytest.mark.integration
def test_port_held_by_something_else_is_unavailable(tmp_path):
    store = tmp_path / "r" / "pickle"
    make_store(store, steps=2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = run(
            "run_visualizer_local.py", "--pickle-dir", str(store), "--port", str(port), "--once"
        )
    assert result.returncode == ExitCode.UNAVAILABLE
    assert f"port {port}" in result.stderr and "not visdom" in result.stderr


def _following(pickle_dir: Path, *options: str) -> subprocess.Popen:
    """``python -m visualizer`` following ``pickle_dir`` (no visdom server: it keeps retrying)."""
    return subprocess.Popen(
        [sys.executable, "-m", "visualizer", "--pickle-dir", str(pickle_dir),
         "--port", str(free_port()), "--no-start-server", *options],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize(
    ("stop", "status"), [(signal.SIGINT, ExitCode.INTERRUPTED), (signal.SIGTERM, ExitCode.OK)]
)
def test_a_signal_while_following_ends_it_as_the_exit_code_table_says(tmp_path, stop, status):
    """Following with no visdom yet (it waits for one): Ctrl-C ends it with 130, SIGTERM (its
    ordinary stop) with 0, as docs/bad-input.md says."""
    table = (ROOT / "docs" / "bad-input.md").read_text()
    assert "it draws a last pass and exits 0, never 143; Ctrl-C exits 130" in table
    store = tmp_path / "r" / "pickle"
    make_store(store, steps=2)
    proc = _following(store)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("visdom: ")
        proc.send_signal(stop)
        _, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        reap(proc)
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr


@pytest.mark.integration
def test_once_when_runs_selects_none_names_the_regex_and_the_runs(tmp_path):
    for name in ("lr-0.1", "lr-0.01"):
        make_store(tmp_path / name / "pickle", steps=2)
    result = run(
        "-m", "visualizer", "--pickle-dir", str(tmp_path), "--once", "--no-start-server",
        "--port", str(free_port()), "--runs", "^bs-",
    )  # fmt: skip
    assert result.returncode == ExitCode.NO_DATA
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    assert "--runs '^bs-'" in errors[0] and "lr-0.01, lr-0.1" in errors[0], result.stderr
    assert result.stdout == ""


@pytest.mark.integration
def test_following_when_runs_selects_none_says_so_once_and_keeps_following(tmp_path):
    for name in ("lr-0.1", "lr-0.01"):
        make_store(tmp_path / name / "pickle", steps=2)
    proc = _following(tmp_path, "--runs", "^bs-")
    try:
        assert proc.stderr is not None
        # Said once the runs are read, while following (so after "no visdom server answers").
        said = _line_with(proc.stderr, "matches --runs")
        assert "--runs '^bs-'" in said and "lr-0.01, lr-0.1" in said, said
        assert "waiting for a run that matches" in said, said
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        reap(proc)
    assert proc.returncode == ExitCode.INTERRUPTED, stderr
    assert "matches --runs" not in stderr, "said once"


def _line_with(stream, text: str, most: int = 50) -> str:
    """The first of the next ``most`` lines of ``stream`` that holds ``text``."""
    for _ in range(most):
        line = stream.readline()
        if text in line:
            return line
    raise AssertionError(f"no line with {text!r}")
