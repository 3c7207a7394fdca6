"""The S3 plugin pointed at a benchmark's own SeaweedFS server, phase by phase."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from tests.fixtures.servers.seaweed import CONFLICTING_ENV
from transfer_plugins import s3 as s3_plugin

BUCKET = "bench"
MB = 1_000_000


@contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` (and clear CONFLICTING_ENV) in os.environ for the block."""
    saved = dict(os.environ)
    for name in CONFLICTING_ENV:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def forget_uploader() -> None:
    """Make ``save_to_s3`` build its client and destination again from the environment.

    The plugin builds them once per process, as training needs; the benchmark
    points it at a new bucket per phase.
    """
    s3_plugin._uploader = None
