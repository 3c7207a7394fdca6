"""workloads: built for the tests and the benchmarks, never imported by the product."""

from pathlib import Path

import pytest

from tests.fixtures.imports import PRODUCT_PACKAGES as PRODUCT
from tests.fixtures.imports import imported_packages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", PRODUCT)
def test_no_product_module_imports_the_workloads(package):
    importing = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / package).rglob("*.py"))
        if imported_packages(path) & {"workloads", "bench", "tests"}
    ]
    assert importing == []


def test_the_workloads_import_no_test_or_benchmark():
    for path in (ROOT / "workloads").glob("*.py"):
        assert imported_packages(path) & {"bench", "tests"} == set(), path
