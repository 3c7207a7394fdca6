"""run_core: the shared core imports no package of the project and nothing heavy."""

from pathlib import Path

import pytest

import run_core
from tests.fixtures.imports import imported_packages

PACKAGE = Path(run_core.__file__).parent
# Every package imports the core; the core imports none of them, nor numpy or torch.
FORBIDDEN = {
    "snapshot_store",
    "trainer",
    "visualizer",
    "transfer_plugins",
    "integrations",
    "remote_train_monitor",
    "bench",
    "tests",
    "torch",
    "numpy",
    "PIL",
}


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py")))
def test_the_core_imports_nothing_of_the_project(module):
    assert imported_packages(PACKAGE / module) & FORBIDDEN == set()
