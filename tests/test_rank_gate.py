"""One rank gate: the rank is read in one module, and no writer asks who records.

As nanoGPT's ``master_process`` and Lightning's ``rank_zero_only``: ``run_core/launch_env.py``
reads the rank from the launcher (torch.distributed, torchrun's variables, Slurm's) and
decides once who records (``LaunchEnv.is_rank_zero``, ``rank_zero_only``); the store's
``Recorder`` and the ``SummaryWriter`` are null objects on the other ranks, so the store,
the writer, the adapters and the viewer never compare a rank with 0.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fixtures.imports import PRODUCT_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
# The launcher's words for this process's rank: whoever reads one reads the rank.
RANK_VARIABLES = frozenset(
    {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK"}
)
# Who reads the gate's flag, LaunchEnv.is_rank_zero, rather than being handed a null
# recorder or writer: the trainer's run, nanoGPT-shaped (its session reads it once, as
# master_process, for what only rank 0 opens, logs, saves or shows; the CLI sets other
# ranks' logging to errors; the preflight probes what only rank 0 will write), and the
# W&B-style module, whose wandb.init opens a writer on rank 0 and a Run that stores
# nothing elsewhere.
TRAINING_LOOP = frozenset(
    {
        "trainer/command/cli.py",
        "trainer/training/checks.py",
        "trainer/training/session.py",
        "integrations/wandb.py",
    }
)


def _modules() -> list[tuple[str, ast.AST]]:
    return [
        (str(path.relative_to(ROOT)), ast.parse(path.read_text(), str(path)))
        for package in PRODUCT_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    ]


def _is_rank(node: ast.AST) -> bool:
    """``rank`` or ``<anything>.rank``: a process's global rank."""
    return (isinstance(node, ast.Name) and node.id == "rank") or (
        isinstance(node, ast.Attribute) and node.attr == "rank"
    )


def reads_the_rank(tree: ast.AST) -> bool:
    """Whether a module reads the rank from where launchers put it: a launcher variable
    (``environ.get("RANK")``, ``env["SLURM_PROCID"]``) or ``torch.distributed.get_rank()``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "get_rank":
                return True
            names = {arg.value for arg in node.args if isinstance(arg, ast.Constant)}
            if names & RANK_VARIABLES:
                return True
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value in RANK_VARIABLES:
                return True
    return False


def decides_rank_zero(tree: ast.AST) -> bool:
    """Whether a module decides who records from a rank: ``rank == 0``, ``rank != 0``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            zero = any(isinstance(x, ast.Constant) and x.value == 0 for x in operands)
            if zero and any(_is_rank(x) for x in operands):
                return True
    return False


def asks_the_gate(tree: ast.AST) -> bool:
    """Whether a module reads the gate's flag, ``is_rank_zero``, instead of being handed a
    recorder or writer that is a null one on other ranks."""
    return any(isinstance(n, ast.Attribute) and n.attr == "is_rank_zero" for n in ast.walk(tree))


def test_the_rank_is_read_in_one_module():
    assert [name for name, tree in _modules() if reads_the_rank(tree)] == ["run_core/launch_env.py"]


def test_who_records_is_decided_in_one_module():
    deciding = [name for name, tree in _modules() if decides_rank_zero(tree)]
    # trainer/ranks/rendezvous.py: rank 0 hosts the job's TCPStore, the process group's
    # own arithmetic, not who records.
    assert deciding == ["run_core/launch_env.py", "trainer/ranks/rendezvous.py"]


def test_no_writer_asks_the_gate():
    asking = {name for name, tree in _modules() if asks_the_gate(tree)}
    assert asking - {"run_core/launch_env.py"} == TRAINING_LOOP
