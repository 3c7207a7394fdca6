"""The one redaction rule over Hugging Face's arguments: secrets masked, the rest readable.

Every field of the installed transformers' ``TrainingArguments`` is checked: only
``hub_token`` holds a secret; ``average_tokens_across_devices`` and
``include_num_input_tokens_seen`` (names with "token" in them) stay readable. The
Trainer's ``run_name`` is the run's shown name.
"""

from __future__ import annotations

import dataclasses

import pytest

from run_core.redaction import REDACTED, is_secret_name, redact
from snapshot_store import read_store

SECRET_FIELDS = {"hub_token"}  # of TrainingArguments' fields, the ones holding a secret


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        *[(n, True) for n in ("hub_token", "token", "api_key", "apiKey", "password", "db_pwd")],
        *[(n, True) for n in ("AWS_SECRET_ACCESS_KEY", "X-Amz-Security-Token", "use_auth_token")],
        *[(n, False) for n in ("average_tokens_across_devices", "include_num_input_tokens_seen")],
        *[(n, False) for n in ("pad_token_id", "eos_token", "max_tokens", "num_key_value_heads")],
        *[(n, False) for n in ("tokenizer_name", "hub_model_id", "sort_keys", "author")],
    ],
)
def test_a_name_is_secret_when_it_says_so_not_when_it_contains_token(name, secret):
    assert is_secret_name(name) is secret


def test_training_arguments_fields_are_readable_but_the_hub_token(tmp_path):
    from transformers import TrainingArguments  # lazily: the import takes seconds

    fields = {field.name for field in dataclasses.fields(TrainingArguments)}
    assert {name for name in fields if is_secret_name(name)} == SECRET_FIELDS
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"), hub_token="hf_canary", report_to=[], use_cpu=True
    )
    plain = args.to_dict()
    stored = redact({**plain, "hub_token": "hf_canary", "hub": "https://user:pass@host/x"})
    assert stored["hub_token"] == REDACTED and stored["hub"] == "https://user:***@host/x"
    for name in fields - SECRET_FIELDS:
        if name in plain:
            assert REDACTED not in repr(stored[name]), name
    assert stored["average_tokens_across_devices"] == plain["average_tokens_across_devices"]
    assert stored["include_num_input_tokens_seen"] == plain["include_num_input_tokens_seen"]


def test_the_trainers_run_name_is_the_runs_shown_name(tmp_path):
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from remote_train_monitor.transformers import MonitorCallback

    names = {}
    for run_name in ("my-run", None):
        out = tmp_path / f"out-{run_name}"
        args = TrainingArguments(output_dir=str(out), run_name=run_name, report_to=[], use_cpu=True)
        callback = MonitorCallback()
        state = TrainerState(global_step=1, is_world_process_zero=True)
        callback.on_log(args, state, TrainerControl(), logs={"loss": 0.5})
        callback.on_train_end(args, state, TrainerControl())
        names[run_name] = read_store(out / "pickle")[2].meta["name"]
    assert names == {"my-run": "my-run", None: "out-None"}  # else named after output_dir
