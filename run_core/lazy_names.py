"""A package's public names, each imported from the module that owns it on first use.

``snapshot_store``, ``trainer`` and ``remote_train_monitor`` export names whose modules
are costly to import (torch, the writer, pandas) or that a process may never need (a
reader needs no writer): the package's ``__getattr__`` (PEP 562) imports a name's owner
when the name is first asked for, and keeps it in the package so later lookups are
plain attribute reads.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


class LazyNames:
    """``package``'s public names, loaded from their owners (``name -> module``, absolute
    or relative to ``package``): use ``__getattr__ = names.load`` and ``__dir__ = names.listed``."""

    def __init__(self, package: str, owners: Mapping[str, str]) -> None:
        self.package = package
        self.owners = dict(owners)

    def load(self, name: str) -> Any:
        """``name`` imported from its owner and kept in the package; AttributeError if unknown."""
        owner = self.owners.get(name)
        if owner is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(owner, self.package), name)
        setattr(sys.modules[self.package], name, value)  # asked once: later lookups find it
        return value

    def listed(self) -> list[str]:
        """What ``dir(package)`` shows: what it holds and every name it exports."""
        return sorted({*vars(sys.modules[self.package]), *self.owners})
