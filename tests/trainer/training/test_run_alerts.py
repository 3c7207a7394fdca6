"""The trainer's own alerts: ``--alert-rule`` and ``--alert-cmd`` (``fit(alert_rule=...)``) judged
on the run's writer thread, checked before training, each alert sent once and kept in status."""

from __future__ import annotations

import json

import pytest

import trainer
from run_core.launch_env import LaunchEnv
from snapshot_store.alerting.sent import sent_keys
from snapshot_store.alerting.webhook import WEBHOOK_VAR
from snapshot_store.format import frames as fmt
from tests.fixtures.runs.fit import linear_parts, small_datasets
from trainer.command.options import parse_train_args
from trainer.training.checks import preflight
from trainer.training.config import RunConfig, UsageError

PLUGIN = """import json, os

def notify(alert):
    with open(os.environ["ALERTS_OUT"], "a") as out:
        out.write(json.dumps(alert) + "\\n")
"""


def _config(tmp_path, **options) -> RunConfig:
    return RunConfig.from_options({"checkpoints_dir": tmp_path / "c", "name": "run", **options})


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"alert_rule": ["slower:samples_per_s"]}, "judges against a baseline run"),
        ({"alert_rule": ["diverging:train/loss"]}, "need somewhere to send alerts"),
        ({"alert_rule": ["train/loss>1"], "alert_cmd": "no_such_module.notify"}, "no_such_module"),
        ({"alert_cmd": "myalerts"}, "is not a dotted path"),
    ],
)
def test_alert_options_that_can_not_work_stop_the_run_before_it_writes(
    tmp_path, monkeypatch, options, said
):
    monkeypatch.delenv(WEBHOOK_VAR, raising=False)
    config = _config(tmp_path, **options)
    with pytest.raises(UsageError, match=said) as err:
        preflight(config, LaunchEnv())
    assert "\n" not in str(err.value)
    assert not (tmp_path / "c").exists(), "a refused run writes nothing"


def test_a_rule_that_does_not_parse_is_the_options_one_line(monkeypatch):
    with pytest.raises(UsageError) as err:
        parse_train_args(["--dataroot", "d", "--alert-rule", "val/loss>two"])
    assert str(err.value).startswith("--alert-rule val/loss>two: 'val/loss>two': 'two' is not a")


def test_fit_sends_its_alerts_through_the_plugin_and_keeps_them_in_status(tmp_path, monkeypatch):
    (tmp_path / "myalerts.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)  # --alert-cmd imports from the working directory, as the seeds do
    monkeypatch.setenv("ALERTS_OUT", str(tmp_path / "alerts.jsonl"))
    monkeypatch.delenv(WEBHOOK_VAR, raising=False)
    model, criterion, optimizer = linear_parts()
    trainer.fit(
        model, criterion, optimizer, datasets=small_datasets(), num_epochs=1, batch_size=8,
        checkpoints_dir=tmp_path / "c", name="run", remote=True, device="cpu",
        alert_rule=["train/loss>-1"], alert_cmd="myalerts.notify",
    )  # fmt: skip
    alerts = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert [a["event"] for a in alerts] == ["rule", "finished"], alerts  # in order
    assert alerts[0]["detail"].endswith("and the rule is train/loss>-1")
    store = tmp_path / "c" / "run" / "pickle"
    status = fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), store)
    assert sent_keys(status) == {a["key"] for a in alerts}
