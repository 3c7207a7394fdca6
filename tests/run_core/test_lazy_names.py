"""run_core.lazy_names: each package's public names imported from their owners on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import remote_train_monitor
import snapshot_store
import trainer
from tests.fixtures.servers.processes import REPO


@pytest.mark.parametrize("package", [snapshot_store, trainer, remote_train_monitor])
def test_every_exported_name_loads_from_its_owner_and_is_listed(package):
    for name in package.__all__:
        value = getattr(package, name)
        assert getattr(value, "__name__", name) == name
        assert name in vars(package)  # kept: the next lookup is a plain attribute read
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    with pytest.raises(AttributeError, match="module 'snapshot_store' has no attribute 'nope'"):
        snapshot_store.nope  # noqa: B018


@pytest.mark.integration
def test_the_reader_is_loaded_without_the_writer():
    code = (
        "import sys, snapshot_store; snapshot_store.read_store; "
        "print('snapshot_store.write.recorder' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr
