"""Shared pytest fixtures live in tests/fixtures/: servers/ has one module per real part the
tests start, runs/ the runs they start, logged/ what is logged.

A test that uses one of those real parts is an integration test: it is marked
``integration`` here, from the fixtures it asks for, so no test has to remember
to mark itself. Tests that start processes of their own (torchrun, a CLI,
worker processes) carry the mark explicitly.

Optional parts (selenium, Chromium, SeaweedFS, visdom) may be absent, as on a
bare GPU box: a test module that can not be imported only because one is
missing is skipped with the reason, like the fixtures' own skips, and both fail
instead where every part is required (``make test``, CI; :mod:`tests.fixtures.servers.parts`).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from snapshot_store.alerting.webhook import WEBHOOK_VAR
from tests.fixtures.servers.parts import OPTIONAL_MODULES, missing_optional_module, parts_required

# An xdist worker's __main__ is execnet's bootstrap, with no file: to the code under test it
# would look like a notebook (trainer.fit would start its workers with fork). The tests see
# the __main__ that `python -m pytest` has, as in one process.
if os.environ.get("PYTEST_XDIST_WORKER") and not getattr(sys.modules["__main__"], "__file__", None):
    sys.modules["__main__"].__file__ = str(Path(pytest.__file__).with_name("__main__.py"))

# A developer's own alert webhook: no visualizer the tests start may post to it.
os.environ.pop(WEBHOOK_VAR, None)

pytest_plugins = [
    "tests.fixtures.servers.net",
    "tests.fixtures.servers.visdom",
    "tests.fixtures.servers.firefox",
    "tests.fixtures.servers.s3",
    "tests.fixtures.servers.disk",
    "tests.fixtures.servers.npm",
    "tests.fixtures.servers.alerting",
    "tests.fixtures.durations",
]

# Fixtures that start a real server, browser or process group.
INTEGRATION_FIXTURES = frozenset(
    {
        "visdom_server",
        "chromium_driver",
        "reader",
        "s3_server",
        "private_s3_server",
        "s3_bucket",
        "private_s3_bucket",
        "silent_server",
        "small_disk",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a real part as ``integration``, and keep the tests that
    share a module's fixture on one xdist worker."""
    for item in items:
        if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
        if _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether the test asks for a module- or class-scoped fixture (a DDP run, a written
    sweep): under ``--dist loadgroup`` its module's tests then run where it was made once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope in ("module", "class")
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A test module that imports a missing optional part is skipped, naming it."""
    report = yield
    if not (report.failed and isinstance(collector, pytest.Module)) or parts_required():
        return report
    missing = missing_optional_module(str(report.longrepr))
    if missing is None:
        return report
    reason = f"Skipped: {missing} is not installed: {OPTIONAL_MODULES[missing]}"
    return pytest.CollectReport(
        report.nodeid, "skipped", (str(collector.path), 0, reason), [], sections=report.sections
    )


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """The root logger as each test found it: an entry point run in-process (a CLI's
    ``main``) configures logging onto the stream pytest captured for that test, which is
    closed once the test ends; a later test's log line would then print a logging error."""
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in before and not type(handler).__module__.startswith("_pytest"):
            root.removeHandler(handler)
    root.setLevel(level)
