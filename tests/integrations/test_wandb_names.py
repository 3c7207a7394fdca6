"""Every public name of W&B's module is here or named in docs/tensorboard-and-wandb.md's
table of W&B's names (the one list); the calls before logging are W&B's offline mode's.

The table's rows say ``same`` or ``offline`` (the name is here) or ``error`` (using it
raises AttributeError naming it and the table); W&B's names come from the installed W&B.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.runs.training import REPO
from tests.fixtures.runs.wandb_files import run_under_both, stored_run, wandb_run
from tests.fixtures.servers.parts import need_module

DOC = REPO / "docs" / "tensorboard-and-wandb.md"
PRELUDE = Path(__file__).with_name("wandb_prelude.py")
WANDB_NAMES = (
    "import json, wandb; names = {n for n in dir(wandb) if not n.startswith('_')}; "
    "print(json.dumps(sorted(names | set(wandb.__all__) - {'__version__'})))"
)


def names_table() -> dict[str, str]:
    """``{W&B's name: same | offline | error}`` from the doc's table of W&B's names."""
    section = DOC.read_text().split("### W&B's names", 1)[1]
    table: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] in ("same", "offline", "error"):
            for name in re.findall(r"`([^`]+)`", cells[0]):
                assert name not in table, f"{name} is in two rows of the table"
                table[name] = cells[1]
    return table


@pytest.mark.integration
def test_every_public_name_of_wandb_is_here_or_in_the_table(wandb):
    need_module("wandb")
    theirs = json.loads(
        subprocess.run(
            [sys.executable, "-c", WANDB_NAMES], capture_output=True, text=True, check=True
        ).stdout
    )  # a fresh process: what else the suite imported does not add names
    table = names_table()
    assert set(theirs) - set(table) == set(), "W&B names missing from the table"
    for name, here in table.items():
        if here != "error":
            assert hasattr(wandb, name), f"{name} is marked {here} but is absent"
            continue
        with pytest.raises(AttributeError) as raised:  # here now? mark it same or offline
            getattr(wandb, name)
        assert f"wandb.{name} is not available offline" in str(raised.value), name
        assert "docs/tensorboard-and-wandb.md" in str(raised.value)


def test_a_name_nobody_has_and_dunders_are_plain_attribute_errors(wandb):
    with pytest.raises(AttributeError, match="wandb.nonesuch is not available offline"):
        wandb.nonesuch  # noqa: B018
    assert not hasattr(wandb, "__path__") and not hasattr(wandb, "sweep")
    assert "require" in dir(wandb) and "setup" in wandb.__all__


@pytest.mark.integration
def test_the_calls_before_logging_do_what_wandbs_offline_mode_does(tmp_path):
    ref, ours = run_under_both(PRELUDE, tmp_path)
    theirs = json.loads((ref / "observed.json").read_text())
    assert json.loads((ours / "observed.json").read_text()) == theirs
    assert theirs["login"] is False and theirs["require"] is None
    assert theirs["require unknown"] == [
        "raised",
        "require() unsupported requirement: no-such-feature",
    ]
    mine, reference = stored_run(ours / "wandb" / "p" / "n" / "pickle"), wandb_run(ref)
    assert mine["history"] == reference["history"] and mine["options"] == reference["config"]
    assert mine["status"]["state"] == "finished"
