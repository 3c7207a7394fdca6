"""``wandb.config``, ``wandb.summary`` and the top-level calls before ``init``, as W&B's.

W&B binds pre-init objects at import: they can be imported, listed and inspected; using
one raises ``wandb.Error("You must call wandb.init() before wandb.config.x")``. A name
imported before ``init`` keeps the pre-init object; ``wandb.config`` is the run's.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from tests.fixtures.runs.wandb_files import run_under_both

PREINIT = Path(__file__).with_name("wandb_preinit.py")


@pytest.mark.integration
def test_before_during_and_after_a_run_config_summary_and_calls_behave_as_wandbs(tmp_path):
    ref, ours = run_under_both(PREINIT, tmp_path)
    theirs = json.loads((ref / "observed.json").read_text())
    mine = json.loads((ours / "observed.json").read_text())
    assert mine == theirs
    assert theirs["before"]["getattr_raises"] == [] and theirs["before"]["members"] is True
    assert theirs["before"]["errors"]["log"] == [
        "Error",
        "You must call wandb.init() before wandb.log()",
    ]
    assert theirs["during"]["imported config.lr"][0] == "Error"  # W&B rebinds wandb.config only


def test_config_and_summary_import_before_init_and_raise_when_used(wandb):
    from remote_train_monitor.wandb import config, summary

    assert "config" in dict(inspect.getmembers(wandb)) and "summary" in dir(wandb)
    with pytest.raises(wandb.Error, match=r"^You must call wandb\.init\(\) before wandb\.log\(\)$"):
        wandb.log({"loss": 1.0})
    with pytest.raises(wandb.Error, match=r"before wandb\.config\.update$"):
        config.update({"lr": 0.1})
    with pytest.raises(wandb.Error, match=r"before wandb\.summary\['loss'\]$"):
        summary["loss"] = 1.0
    assert wandb.run is None
    wandb.finish()  # as W&B: nothing to finish is not an error
    run = wandb.init(project="p", name="n", config={"lr": 0.1})
    assert wandb.config is run.config and wandb.summary is run.summary and config is not run.config
    run.finish()
    assert wandb.config is config and wandb.run is None
