"""transfer_plugins is a leaf: it knows files and paths, not the store or anything above it."""

from __future__ import annotations

from pathlib import Path

import pytest

import transfer_plugins
from tests.snapshot_store.test_package import imported_packages

PACKAGE = Path(transfer_plugins.__file__).parent
FORBIDDEN = {"trainer", "visualizer", "bench", "snapshot_store", "tests"}


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py")))
def test_the_plugins_import_nothing_above_them(module):
    assert imported_packages(PACKAGE / module) & FORBIDDEN == set()


def test_the_location_type_needs_no_boto3():
    # The visualizer parses s3:// URLs with it before it knows whether boto3 is installed.
    assert {"boto3", "botocore"} & imported_packages(PACKAGE / "s3_location.py") == set()
    assert {"boto3", "botocore"} & imported_packages(PACKAGE / "common.py") == set()
