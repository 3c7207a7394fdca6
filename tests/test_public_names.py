"""One name, one owner: no public top-level name is defined in two modules of the product.

A reader who meets a name looks for its one definition; two modules defining it are
either one concept written twice (merged into one owner) or two concepts sharing a name
(one of them renamed). Imports and re-exports are not definitions.
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The product's packages, as pyproject.toml installs them ("run_core*": a package and its own).
_FIND = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
PACKAGES = tuple(pattern.rstrip("*") for pattern in _FIND["find"]["include"])
# Python's conventions, not concepts of ours: every command's module has its ``main``
# (the entry of ``python -m`` and of the console scripts).
CONVENTIONS = frozenset({"main"})


def _names(target: ast.expr) -> list[str]:
    """The names an assignment target binds: ``a`` or ``a, b`` (not ``a[k]``, ``a.b``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for item in target.elts for name in _names(item)]
    return []


# Calls whose result is its module's own, whatever its name: a logger (``log``), a type
# variable (``T``, a parameter of the module's generic functions, not a concept).
_PER_MODULE = frozenset({"getLogger", "TypeVar", "ParamSpec"})


def _per_module(value: ast.expr | None) -> bool:
    """``logging.getLogger(...)``, ``TypeVar(...)``: a value each module has its own of."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in _PER_MODULE


def top_level_names(path: Path) -> set[str]:
    """The public names ``path`` defines at its top level: functions, classes, assignments."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and not _per_module(node.value):
            names.update(name for target in node.targets for name in _names(target))
        elif isinstance(node, ast.AnnAssign) and not _per_module(node.value):
            names.update(_names(node.target))
    return {name for name in names if not name.startswith("_")} - CONVENTIONS


def owners() -> dict[str, list[str]]:
    """Each public name -> the modules that define it."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name in top_level_names(path):
                found[name].append(str(path.relative_to(ROOT)))
    return found


def test_the_walk_covers_every_product_package():
    assert {"run_core", "snapshot_store", "visualizer", "remote_train_monitor"} <= set(PACKAGES)
    assert all((ROOT / package / "__init__.py").is_file() for package in PACKAGES)


def test_each_public_name_is_defined_in_one_module():
    twice = {name: paths for name, paths in owners().items() if len(paths) > 1}
    listing = "\n".join(f"  {name}: {', '.join(paths)}" for name, paths in sorted(twice.items()))
    assert not twice, f"{len(twice)} public names defined in more than one module:\n{listing}"


def test_the_walk_sees_each_kind_of_definition(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nfrom x import y as z\nimport logging\nfrom typing import TypeVar\n"
        "log = logging.getLogger(__name__)\nT = TypeVar('T')\n"
        "A, (B, C) = 1, (2, 3)\nD: int = 4\nE = F = 5\nd = {}\nd['k'] = 1\n_private = 6\n"
        "def f(): G = 7\nclass K: H = 8\nasync def g(): pass\n"
        "def main(): pass\n"
    )
    assert top_level_names(module) == {"A", "B", "C", "D", "E", "F", "d", "f", "K", "g"}
