"""The house sizes: files ≤ 350 lines, functions ≤ 60, folders ≤ 20 modules, in the product,
the benchmarks and the workloads both build on (the tests' journeys may run longer)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fixtures.imports import PRODUCT_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
CODE = (*PRODUCT_PACKAGES, "bench", "workloads")
MAX_FILE_LINES, MAX_FUNCTION_LINES, MAX_FOLDER_MODULES = 350, 60, 20


def _sources() -> list[Path]:
    return sorted(path for package in CODE for path in (ROOT / package).rglob("*.py"))


def test_no_file_is_over_350_lines():
    long = {}
    for path in _sources():
        lines = len(path.read_text().splitlines())
        if lines > MAX_FILE_LINES:
            long[str(path.relative_to(ROOT))] = lines
    assert long == {}


def test_no_function_is_over_60_lines():
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert long == {}


def test_no_folder_holds_over_20_modules():
    folders: dict[str, int] = {}
    for path in _sources():
        folder = str(path.parent.relative_to(ROOT))
        folders[folder] = folders.get(folder, 0) + 1
    assert {f: n for f, n in folders.items() if n > MAX_FOLDER_MODULES} == {}
