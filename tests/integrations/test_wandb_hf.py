"""Hugging Face's ``Trainer(report_to="wandb", run_name=...)`` through our module
(``replace_wandb()``), compared with W&B 0.31's offline run of the same script: the run's
name, the history's keys, the end-of-training values summary-only, the config (the
TrainingArguments, the model's config and ``model/num_parameters``), nothing masked that
W&B shows (only secrets are: tests/integrations/test_redaction_hf.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.fixtures.runs.wandb_files import run_under_both, stored_run, wandb_run

SCRIPT = Path(__file__).with_name("wandb_hf.py")
END_OF_TRAINING = {"train_runtime", "train_samples_per_second", "train_steps_per_second"}
END_OF_TRAINING |= {"train_loss", "total_flos"}


@pytest.mark.integration
def test_report_to_wandb_through_our_module_keeps_wandbs_run(tmp_path):
    ref_dir, ours_dir = run_under_both(SCRIPT, tmp_path)
    ref = wandb_run(ref_dir)
    ours = stored_run(ours_dir / "wandb" / "huggingface" / "hf-run" / "pickle")
    assert ref["name"] == "hf-run"
    assert set(ours["history"]) == set(ref["history"])
    assert "train/loss" in ours["history"] and "eval/loss" in ours["history"]
    summary = ours["status"]["summary"]
    for key in END_OF_TRAINING:  # summary-only, as W&B keeps them
        assert key in ref["logged"] and key in summary, key
        assert key not in ours["history"] and f"train/{key}" not in ours["history"], key
    assert summary["train_loss"] == pytest.approx(ref["logged"]["train_loss"], rel=1e-6)
    config = ours["options"]  # the reader leaves out W&B's "_" keys: _name_or_path too
    assert {key for key in config if not key.startswith("_")} == set(ref["config"])
    assert config["hidden_size"] == ref["config"]["hidden_size"] == 32
    assert config["model/num_parameters"] == ref["config"]["model/num_parameters"]
    differ = {
        key
        for key, value in ref["config"].items()
        if config[key] != value and not (_nan(value) and _nan(config[key]))
    }
    # Only the secret differs: HF's placeholder for it, masked here too (the one rule).
    assert differ == {"hub_token"} and config["hub_token"] == "***"
    assert config["average_tokens_across_devices"] == ref["config"]["average_tokens_across_devices"]


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)
