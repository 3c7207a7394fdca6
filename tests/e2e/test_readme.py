"""The docs' training and following commands, run as written, in order, on this CPU machine.

The ``bash`` blocks of "Training with --remote True" (docs/training.md) and
"Following a run" (docs/viewer.md) run
in a copy of the checkout, with the project's environment first on ``PATH`` (as
after ``source .venv/bin/activate``). Each training command must exit 0. Each
following command must print its page's URL; it is then stopped as a person
would (Ctrl-C: exit status 130). A command that reads a bucket (``s3://my-bucket``, a placeholder)
is left out here: the S3 journey has its own tests with a real S3 server.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from run_core.exit_codes import ExitCode
from tests.fixtures.runs.checkout import ROOT, checkout_copy
from tests.fixtures.servers.waiting import EXIT_WAIT_S, wait_until

# (page, heading): the README's recipes link to these sections.
SECTIONS = (
    ("docs/training.md", "## Training with `--remote True`"),
    ("docs/viewer.md", "## Following a run"),
)


def readme_commands(section: tuple[str, str]) -> list[str]:
    """The commands of the first ``bash`` block under ``section``: see :func:`block_commands`."""
    page, heading = section
    text = (ROOT / page).read_text()
    block = re.search(r"```bash\n(.*?)```", text[text.index(heading) :], re.S)
    assert block, f"no bash block under {heading!r} in {page}"
    return block_commands(block.group(1))


def block_commands(block: str) -> list[str]:
    """The commands of a ``bash`` block's text, continuation lines joined, comments dropped.

    A ``for`` loop stays one command, up to its ``done``.
    """
    commands: list[str] = []
    pending = ""
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("  #")[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        pending = f"{pending}\n{line}" if pending else line
        if pending.startswith("for ") and pending.split()[-1] != "done":
            continue
        commands.append(pending)
        pending = ""
    return commands


@pytest.fixture
def shell_env() -> dict[str, str]:
    """The environment after ``source .venv/bin/activate``: its python and torchrun first."""
    bin_dir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", OMP_NUM_THREADS="1")


@pytest.mark.integration  # trainings under torchrun, visualizers and their visdom
@pytest.mark.slow(
    reason="every training and following command of two pages, in order: five trainings, two under torchrun"
)
@pytest.mark.timeout(900)
def test_the_readme_commands_run_as_written_in_order(tmp_path, shell_env):
    repo = checkout_copy(tmp_path / "repo")
    training = readme_commands(SECTIONS[0])
    assert any(c.startswith("torchrun ") for c in training) and any("for lr" in c for c in training)
    for command in training:
        done = subprocess.run(["bash", "-c", command], cwd=repo, env=shell_env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    for command in readme_commands(SECTIONS[1]):
        if "s3://" in command:
            continue
        _follow_until_its_url(command, repo, shell_env, tmp_path / "follow.log")


def _follow_until_its_url(command: str, repo: Path, env: dict[str, str], log: Path) -> None:
    with log.open("wb") as out:
        proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=repo, env=env,
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        wait_until(lambda: "visdom: http://" in log.read_text() or proc.poll() is not None, 120)
        assert "visdom: http://" in log.read_text(), f"{command}\n{log.read_text()[-3000:]}"
        proc.send_signal(signal.SIGINT)
        # Ctrl-C's documented exit status, after stopping the visdom it started.
        assert proc.wait(EXIT_WAIT_S) == ExitCode.INTERRUPTED, (
            f"{command}\n{log.read_text()[-3000:]}"
        )
        assert "stopping visdom" in log.read_text() or "visdom answers" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
