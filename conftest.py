"""Shared pytest fixtures live in tests/fixtures/, one module per real part the tests start.

A test that uses one of those real parts is an integration test: it is marked
``integration`` here, from the fixtures it asks for, so no test has to remember
to mark itself. Tests that start processes of their own (torchrun, a CLI,
worker processes) carry the mark explicitly.
"""

from __future__ import annotations

import pytest

pytest_plugins = [
    "tests.fixtures.net",
    "tests.fixtures.visdom",
    "tests.fixtures.s3",
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
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses a real part as ``integration``."""
    for item in items:
        if INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
