"""trainer.checks: the transfer hook and its destination are checked before training."""

from __future__ import annotations

import time

import pytest

from snapshot_store import ExitCode
from snapshot_store.values import redact
from tests.trainer.helpers import train_args
from trainer import cli

PASSWORD = "PW-canary-7f3a"
# The URL rule of snapshot_store.values.redact (user:password@ in URLs) is another part of
# issue 15; until it is there, the password check below can not pass.
URL_RULE = PASSWORD not in str(redact({"message": f"http://alice:{PASSWORD}@host"}))


@pytest.mark.timeout(120)
def test_an_endpoint_that_never_answers_is_one_error_before_training(
    silent_server, tiny_dataset, tmp_path, monkeypatch, capsys
):
    endpoint = silent_server.replace("http://", f"http://alice:{PASSWORD}@")
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "AKIDSILENT",
        "AWS_SECRET_ACCESS_KEY": "silent-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "TRANSFER_S3_URI": "s3://bucket/runs",
    }.items():
        monkeypatch.setenv(name, value)
    checkpoints = tmp_path / "checkpoints"
    args = train_args(
        tiny_dataset, checkpoints, "exp", "--remote-transfer-cmd", "transfer_plugins.s3.save_to_s3"
    )
    started = time.monotonic()

    code = cli.main(["train", *args])

    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == ExitCode.USAGE, err
    assert len(lines) == 1 and lines[0].startswith("trainer train: error: transfer check failed")
    assert "sent no answer within 4 s" in lines[0] and "AWS_ENDPOINT_URL" in lines[0]
    assert "silent-secret-key" not in err
    assert not list(checkpoints.rglob("*.pth")) and not (checkpoints / "exp" / "pickle").exists()
    assert elapsed < 15 + 30, elapsed  # 15 s for the check, the rest for imports on a busy machine
    if not URL_RULE:
        pytest.skip("snapshot_store.values.redact has no URL rule yet: password echo unchecked")
    assert PASSWORD not in err
