"""tests/fixtures/durations.py: a test over the limit fails the run unless it says why it is slow.

A child pytest runs three small tests with the limit lowered to nothing (a conftest of
its own sets it), as xdist would run them (``-n 2``), and once without xdist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration  # child pytest processes
REPO = Path(__file__).resolve().parents[1]

TESTS = """
import pytest

def test_quick():
    pass

@pytest.mark.slow(reason="trains a model")
def test_marked():
    pass
"""
LOWERED = "import tests.fixtures.durations as d\nd.LIMIT_S = -1.0\n"


@pytest.fixture(autouse=True)
def _repo_importable(monkeypatch):
    """The child finds ``tests.fixtures`` as the suite does, from the repository root."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_a_test_over_the_limit_fails_the_run_and_a_slow_one_does_not(pytester, workers):
    pytester.makeconftest(LOWERED + "pytest_plugins = ['tests.fixtures.durations']\n")
    pytester.makepyfile(test_times=TESTS)
    pytester.makeini("[pytest]\nmarkers =\n    slow: may take long\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*FAILED (time) test_times.py::test_quick*mark it @pytest.mark.slow*"]
    )
    assert "test_marked" not in result.stdout.str().split("FAILED (time)")[-1]
    result.assert_outcomes(passed=2)


def test_a_slow_mark_without_a_reason_is_refused(pytester):
    pytester.makeconftest("pytest_plugins = ['tests.fixtures.durations']\n")
    pytester.makepyfile(test_bare="import pytest\n\n@pytest.mark.slow\ndef test_it():\n    pass\n")
    pytester.makeini("[pytest]\nmarkers =\n    slow: may take long\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_bare.py::test_it: @pytest.mark.slow needs reason='why'*"])
