"""The package's surface: lazy exports, and imports that only run downward (a leaf, no torch)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import snapshot_store
from tests.fixtures.imports import imported_packages

PACKAGE = Path(snapshot_store.__file__).parent
# Above the store in the data flow, or a sibling leaf: never imported from here.
FORBIDDEN = {"trainer", "visualizer", "bench", "transfer_plugins", "torch", "tests"}


@pytest.mark.parametrize(
    "module", sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py"))
)
def test_the_store_imports_nothing_above_it(module):
    assert imported_packages(PACKAGE / module) & FORBIDDEN == set()


def test_every_export_loads():
    for name in snapshot_store.__all__:
        assert getattr(snapshot_store, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'detect_rank'"):
        snapshot_store.detect_rank  # noqa: B018 - the lookup is the test


def test_type_checkers_see_the_same_exports_as_run_time():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    checked = {
        alias.asname or alias.name: "." * node.level + str(node.module)
        for block in tree.body
        if isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert checked == snapshot_store._NAMES.owners
