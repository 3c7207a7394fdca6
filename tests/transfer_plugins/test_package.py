"""transfer_plugins knows files and paths: of the store only its atomic write, nothing above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import transfer_plugins
from tests.fixtures.imports import imported_packages

PACKAGE = Path(transfer_plugins.__file__).parent
FORBIDDEN = {"trainer", "visualizer", "bench", "tests"}


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py")))
def test_the_plugins_import_nothing_above_them(module):
    assert imported_packages(PACKAGE / module) & FORBIDDEN == set()


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py")))
def test_of_the_store_the_plugins_use_only_its_atomic_write(module):
    tree = ast.parse((PACKAGE / module).read_text())
    used = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert {m for m in used if m.split(".")[0] == "snapshot_store"} <= {"run_core.atomic"}


def test_the_location_type_needs_no_boto3():
    # The visualizer parses s3:// URLs with it before it knows whether boto3 is installed.
    assert {"boto3", "botocore"} & imported_packages(PACKAGE / "s3_location.py") == set()
    assert {"boto3", "botocore"} & imported_packages(PACKAGE / "common.py") == set()
