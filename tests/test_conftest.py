"""The root conftest and tests/fixtures/servers/parts.py: a bare GPU box runs the suite, `make test` needs every part.

A child pytest runs with selenium and boto3 made unimportable (as where they are
not installed): the tests that need them are skipped naming the part, and with
REQUIRE_ALL_PARTS=1 (what `make test` sets) they fail instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCKER = """
import importlib.abc, sys

class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"selenium", "boto3", "botocore"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Missing())
"""
# A module importing selenium at its top, and tests taking the S3 fixtures.
TESTS = ["tests/visualizer/server/test_process.py", "tests/transfer_plugins/test_mysave.py"]


def _pytest_without_parts(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "REQUIRE_ALL_PARTS"}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *args, *TESTS],
        cwd=REPO,
        env={**clean, "PYTHONPATH": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.integration
def test_tests_needing_a_missing_part_are_skipped_naming_it(tmp_path):
    result = _pytest_without_parts(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "test_process.py:0: selenium is not installed" in result.stdout
    assert "test_mysave.py" in result.stdout and "boto3 is not installed" in result.stdout
    assert " passed" not in result.stdout and "error" not in result.stdout.lower()


@pytest.mark.integration
def test_a_missing_part_fails_where_every_part_is_required(tmp_path):
    result = _pytest_without_parts(
        tmp_path, "--continue-on-collection-errors", REQUIRE_ALL_PARTS="1"
    )
    assert result.returncode != 0
    assert "ERROR collecting tests/visualizer/server/test_process.py" in result.stdout
    assert "No module named 'selenium'" in result.stdout
    assert "3 errors" in result.stdout  # the module, and test_mysave's two at their S3 fixture
    assert "boto3 is not installed" in result.stdout and "REQUIRE_ALL_PARTS" in result.stdout


XDIST = ["-n", "2", "--dist", "loadgroup"]  # as the Makefile runs the suite
GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    with open(os.environ["WORKERS_LOG"], "a") as log:
        log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


def test_a_group_mark_keeps_its_tests_on_one_worker(tmp_path):
    """`make test`'s `--dist loadgroup` keeps a module's tests that share a module fixture on
    one worker (the root conftest marks them): under pytest 9.2 with pytest-xdist 3.8 every
    mark was ignored and such a fixture (a DDP run, a written sweep) was built twice."""
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    log = tmp_path / "workers.log"
    where = ["-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *XDIST, *where],
        cwd=tmp_path,
        env={**os.environ, "WORKERS_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = log.read_text().split()
    assert len(workers) == 8 and len(set(workers)) == 1, workers
