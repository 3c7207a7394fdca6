"""transfer_plugins.s3 against a real SeaweedFS S3 server."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError

from run_core import atomic
from snapshot_store.format import batches
from snapshot_store.format import frames as fmt
from tests.fixtures.servers.net import free_port
from transfer_plugins import s3 as plugin
from transfer_plugins.s3 import S3TransferError, save_to_s3

PREFIX = "runs/exp1"
SEGMENT = "myrun/pickle/scalars-00000000.pickle"


@pytest.fixture(autouse=True)
def fresh_plugin(monkeypatch):
    """Each test configures the plugin through the env, so it must re-read it."""
    monkeypatch.setattr(plugin, "_uploader", None)


@pytest.fixture
def checkpoints(tmp_path: Path) -> Path:
    """A checkpoints dir holding one run's store directory."""
    (tmp_path / "myrun" / "pickle").mkdir(parents=True)
    return tmp_path


@pytest.fixture
def bucket(s3_bucket, monkeypatch):
    """A fresh bucket with TRANSFER_S3_URI pointing at a prefix in it."""
    monkeypatch.setenv("TRANSFER_S3_URI", s3_bucket.uri(PREFIX))
    return s3_bucket


def _append_batch(path: Path, step: int) -> bytes:
    series = [("loss", "train", [step], [0.0], [1.0 * step], [1.0 / (step + 1)])]
    with path.open("ab") as f:
        f.write(batches.encode_scalar_batch(series))
    return path.read_bytes()


def _random_file(path: Path, size: int) -> bytes:
    data = os.urandom(size)
    path.write_bytes(data)
    return data


def test_uploads_each_file_under_the_prefix_byte_for_byte(bucket, checkpoints):
    segment = _append_batch(checkpoints / SEGMENT, 0)
    checkpoint = _random_file(checkpoints / "myrun" / "latest.pth", 300_000)

    assert save_to_s3(checkpoints / SEGMENT, SEGMENT)
    assert save_to_s3(str(checkpoints / "myrun" / "latest.pth"), "myrun/latest.pth")

    assert bucket.keys() == [f"{PREFIX}/myrun/latest.pth", f"{PREFIX}/{SEGMENT}"]
    assert bucket.read(f"{PREFIX}/{SEGMENT}") == segment
    assert bucket.read(f"{PREFIX}/myrun/latest.pth") == checkpoint


def test_objects_carry_a_crc32_checksum(bucket, checkpoints):
    _append_batch(checkpoints / SEGMENT, 0)
    save_to_s3(checkpoints / SEGMENT, SEGMENT)

    head = bucket.client().head_object(
        Bucket=bucket.name, Key=f"{PREFIX}/{SEGMENT}", ChecksumMode="ENABLED"
    )
    assert head["ChecksumCRC32"]


@pytest.mark.parametrize("uri_suffix", ["", "/"])
def test_a_uri_without_prefix_uses_the_relative_path_as_key(
    s3_bucket, monkeypatch, checkpoints, uri_suffix
):
    monkeypatch.setenv("TRANSFER_S3_URI", s3_bucket.uri() + uri_suffix)
    data = _append_batch(checkpoints / SEGMENT, 0)

    save_to_s3(checkpoints / SEGMENT, SEGMENT)

    assert s3_bucket.keys() == [SEGMENT]
    assert s3_bucket.read(SEGMENT) == data


def test_an_unchanged_file_is_not_sent_again(bucket, checkpoints):
    _append_batch(checkpoints / SEGMENT, 0)
    assert save_to_s3(checkpoints / SEGMENT, SEGMENT)
    # Deleted behind the plugin's back: only a new PUT could bring it back.
    bucket.client().delete_object(Bucket=bucket.name, Key=f"{PREFIX}/{SEGMENT}")

    assert not save_to_s3(checkpoints / SEGMENT, SEGMENT)

    assert bucket.keys() == []


def test_a_grown_segment_is_sent_again(bucket, checkpoints):
    _append_batch(checkpoints / SEGMENT, 0)
    save_to_s3(checkpoints / SEGMENT, SEGMENT)
    grown = _append_batch(checkpoints / SEGMENT, 1)

    assert save_to_s3(checkpoints / SEGMENT, SEGMENT)

    assert bucket.read(f"{PREFIX}/{SEGMENT}") == grown


def test_an_atomically_replaced_document_of_the_same_size_is_sent_again(bucket, checkpoints):
    status = checkpoints / "myrun" / "pickle" / fmt.STATUS_FILE
    relative = f"myrun/pickle/{fmt.STATUS_FILE}"
    atomic.write_atomic(status, fmt.encode_document({"state": "running", "step": 10}))
    save_to_s3(status, relative)
    replaced = fmt.encode_document({"state": "running", "step": 11})
    atomic.write_atomic(status, replaced)

    assert save_to_s3(status, relative)

    assert bucket.read(f"{PREFIX}/{relative}") == replaced


def test_a_large_file_goes_multipart_and_arrives_intact(bucket, checkpoints):
    size = plugin.MULTIPART_THRESHOLD + 4 * 1024 * 1024 + 123
    data = _random_file(checkpoints / "myrun" / "latest.pth", size)
    key = f"{PREFIX}/myrun/latest.pth"

    save_to_s3(checkpoints / "myrun" / "latest.pth", "myrun/latest.pth")

    client = bucket.client()
    head = client.head_object(Bucket=bucket.name, Key=key, ChecksumMode="ENABLED")
    parts = client.head_object(Bucket=bucket.name, Key=key, PartNumber=1)["PartsCount"]
    assert parts == 3
    assert head["ETag"].strip('"').endswith(f"-{parts}")
    assert head["ChecksumCRC32"]
    assert bucket.read(key) == data


def test_concurrent_calls_for_a_growing_segment_leave_the_newest_content(bucket, checkpoints):
    path = checkpoints / SEGMENT
    workers = []
    for step in range(8):
        _append_batch(path, step)
        worker = threading.Thread(target=save_to_s3, args=(path, SEGMENT))
        worker.start()
        workers.append(worker)
    for worker in workers:
        worker.join()

    assert bucket.read(f"{PREFIX}/{SEGMENT}") == path.read_bytes()


def test_a_failed_upload_is_retried_by_the_next_call_once_s3_is_back(
    private_s3_bucket, monkeypatch, checkpoints
):
    monkeypatch.setenv("TRANSFER_S3_URI", private_s3_bucket.uri(PREFIX))
    server = private_s3_bucket.server
    path = checkpoints / SEGMENT
    _append_batch(path, 0)
    save_to_s3(path, SEGMENT)
    grown = _append_batch(path, 1)

    server.stop()
    with pytest.raises((BotoCoreError, S3UploadFailedError)):
        save_to_s3(path, SEGMENT)
    server.start()

    assert save_to_s3(path, SEGMENT)
    assert private_s3_bucket.read(f"{PREFIX}/{SEGMENT}") == grown


@pytest.mark.parametrize("relative", ["../escape.pickle", "/etc/passwd", "", "myrun/../../x"])
def test_paths_outside_the_checkpoints_dir_are_refused(bucket, checkpoints, relative):
    _append_batch(checkpoints / SEGMENT, 0)
    with pytest.raises(ValueError, match="not a relative POSIX path"):
        save_to_s3(checkpoints / SEGMENT, relative)
    assert bucket.keys() == []


# --- preflight -------------------------------------------------------------------


def test_preflight_passes_and_leaves_no_probe_behind(bucket):
    save_to_s3.preflight()

    assert bucket.keys() == []


def test_preflight_names_a_missing_bucket_and_how_to_create_it(s3_bucket, monkeypatch):
    monkeypatch.setenv("TRANSFER_S3_URI", f"s3://{s3_bucket.name}-missing/{PREFIX}")

    with pytest.raises(S3TransferError) as caught:
        save_to_s3.preflight()

    message = str(caught.value)
    assert f"'{s3_bucket.name}-missing'" in message
    assert s3_bucket.server.endpoint_url in message
    assert "does not exist" in message
    assert f"aws s3 mb s3://{s3_bucket.name}-missing" in message


def test_preflight_names_an_unreachable_endpoint(bucket, monkeypatch):
    nowhere = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", nowhere)

    with pytest.raises(S3TransferError, match="endpoint unreachable") as caught:
        save_to_s3.preflight()

    assert nowhere in str(caught.value)
    assert "AWS_ENDPOINT_URL" in str(caught.value)


@pytest.mark.parametrize(
    "variable, wrong_value",
    [
        ("AWS_SECRET_ACCESS_KEY", "not-the-secret-0123456789"),
        ("AWS_ACCESS_KEY_ID", "AKNOSUCHKEY0000"),
    ],
)
def test_preflight_rejects_wrong_credentials_without_echoing_them(
    bucket, monkeypatch, variable, wrong_value
):
    monkeypatch.setenv(variable, wrong_value)

    with pytest.raises(S3TransferError, match="access denied") as caught:
        save_to_s3.preflight()

    message = str(caught.value)
    assert "AWS_SECRET_ACCESS_KEY" in message
    assert wrong_value not in message
    assert bucket.server.secret_key not in message


def test_preflight_reports_missing_credentials(bucket, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    # The chain would otherwise ask the EC2 metadata service, off the loopback.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    with pytest.raises(S3TransferError, match="no usable AWS credentials"):
        save_to_s3.preflight()


def test_preflight_and_uploads_require_transfer_s3_uri(s3_bucket, monkeypatch, checkpoints):
    monkeypatch.delenv("TRANSFER_S3_URI", raising=False)
    _append_batch(checkpoints / SEGMENT, 0)

    with pytest.raises(S3TransferError, match="TRANSFER_S3_URI is not set"):
        save_to_s3.preflight()
    with pytest.raises(S3TransferError, match="TRANSFER_S3_URI is not set"):
        save_to_s3(checkpoints / SEGMENT, SEGMENT)


@pytest.mark.parametrize(
    "uri", ["my-bucket/prefix", "https://my-bucket/prefix", "s3://", "s3:///prefix"]
)
def test_preflight_rejects_a_malformed_transfer_s3_uri(s3_bucket, monkeypatch, uri):
    monkeypatch.setenv("TRANSFER_S3_URI", uri)

    with pytest.raises(S3TransferError, match="is not of the form s3://<bucket>/<prefix>"):
        save_to_s3.preflight()


def test_preflight_reports_an_invalid_endpoint_url(bucket, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "127.0.0.1:9000")

    with pytest.raises(S3TransferError, match="Invalid endpoint"):
        save_to_s3.preflight()


@pytest.mark.timeout(60)
def test_preflight_reports_an_endpoint_that_never_answers_within_15_s(silent_server, monkeypatch):
    # Accepts the connection, never sends a byte: the upload client's timeouts and
    # retries would take minutes; the preflight gives up after one short wait.
    monkeypatch.setenv("AWS_ENDPOINT_URL", silent_server)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDSILENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "silent-secret-key")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("TRANSFER_S3_URI", f"s3://bucket/{PREFIX}")
    started = time.monotonic()

    with pytest.raises(S3TransferError) as caught:
        save_to_s3.preflight()

    assert time.monotonic() - started < 15
    message = str(caught.value)
    assert "sent no answer within 4 s" in message and "AWS_ENDPOINT_URL" in message
    assert silent_server in message and "silent-secret-key" not in message
