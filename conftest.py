"""Shared pytest fixtures live in tests/fixtures/, one module per real part the tests start."""

pytest_plugins = [
    "tests.fixtures.net",
    "tests.fixtures.visdom",
    "tests.fixtures.s3",
]
