"""Upload store files and checkpoints to S3.

Use with ``--remote-transfer-cmd transfer_plugins.s3.save_to_s3``. Configured by
the environment only, so no secret is ever in a command line, in code or in a log:

``TRANSFER_S3_URI=s3://bucket/prefix``
    where files go; the key of a file is ``<prefix>/<relative_path>``, e.g.
    ``prefix/myrun/pickle/scalars-00000000.pickle``.
boto3's standard configuration
    credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance
    roles, ...), AWS_DEFAULT_REGION, and AWS_ENDPOINT_URL for S3-compatible servers.

Uploads go through boto3's transfer manager: multipart above
:data:`MULTIPART_THRESHOLD`, every part with a CRC32 checksum that the server
verifies. A file unchanged since its last successful upload is not sent again.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Final

from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from transfer_plugins.common import S3_URI_ENV, SentRecord
from transfer_plugins.s3_client import S3Failure, S3Fault, classify, make_client
from transfer_plugins.s3_location import FORM, S3Location

log = logging.getLogger(__name__)

URI_ENV = S3_URI_ENV

MiB = 1024 * 1024
MULTIPART_THRESHOLD = 16 * MiB
CHECKSUM_ALGORITHM: Final = "CRC32"
TRANSFER_CONFIG = TransferConfig(
    multipart_threshold=MULTIPART_THRESHOLD,
    multipart_chunksize=8 * MiB,
    # boto3's default, kept: hooks named by a spec run in their own process, so
    # these threads do not take the GIL from training, and fewer were slower.
    max_concurrency=10,
)
_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 3},
    connect_timeout=10,
    read_timeout=60,
    # Several runner workers, each with a multipart upload of max_concurrency parts.
    max_pool_connections=32,
    # botocore SHA-256-signs whole payloads on plain-http endpoints, a large share
    # of the client's CPU; the CRC32 checksum already guards integrity.
    s3={"payload_signing_enabled": False},
)
# The start-up check asks for little and must answer fast: an endpoint that takes
# connections and never answers is reported in seconds (3 calls at most), not after
# the upload client's minutes of read timeouts and retries.
PREFLIGHT_TIMEOUT_S = 4.0
_PREFLIGHT_CONFIG = _CLIENT_CONFIG.merge(
    Config(
        connect_timeout=PREFLIGHT_TIMEOUT_S,
        read_timeout=PREFLIGHT_TIMEOUT_S,
        retries={"mode": "standard", "total_max_attempts": 1},
    )
)


class S3TransferError(RuntimeError):
    """S3 transfer misconfigured or unusable; the message says what to fix."""


def location_from_env() -> S3Location:
    """Where ``TRANSFER_S3_URI`` says files go; S3TransferError if it is unset or malformed."""
    uri = os.environ.get(URI_ENV, "").strip()
    if not uri:
        raise S3TransferError(f"{URI_ENV} is not set: set it to {FORM}")
    try:
        return S3Location.parse(uri)
    except ValueError as err:
        raise S3TransferError(f"{URI_ENV}={err}") from None


class _Uploader:
    """Client, destination and upload record of this process."""

    def __init__(self, destination: S3Location) -> None:
        self.destination = destination
        self.client = _client(_CLIENT_CONFIG)
        self.record = SentRecord()

    @property
    def endpoint(self) -> str:
        return self.client.meta.endpoint_url

    def upload(self, source: Path, relative_path: str) -> bool:
        """Upload ``source`` unless unchanged since its last upload; True if sent."""
        key = self.destination.key(relative_path)

        def send() -> None:
            self.client.upload_file(
                str(source),
                self.destination.bucket,
                key,
                ExtraArgs={"ChecksumAlgorithm": CHECKSUM_ALGORITHM},
                Config=TRANSFER_CONFIG,
            )

        sent = self.record.send_if_changed(key, source, send)
        action = "uploaded" if sent else "unchanged, skipped"
        log.debug("%s s3://%s/%s", action, self.destination.bucket, key)
        return sent

    def check(self) -> None:
        """Raise S3TransferError unless the bucket exists and takes a write."""
        bucket = self.destination.bucket
        probe = self.destination.key(f".preflight-{uuid.uuid4().hex}")
        client = _client(_PREFLIGHT_CONFIG)
        try:
            client.head_bucket(Bucket=bucket)
            client.put_object(
                Bucket=bucket, Key=probe, Body=b"", ChecksumAlgorithm=CHECKSUM_ALGORITHM
            )
        except (BotoCoreError, ClientError) as err:
            raise S3TransferError(self._explain(err)) from err
        try:
            client.delete_object(Bucket=bucket, Key=probe)
        except (BotoCoreError, ClientError) as err:
            # Uploads never delete, so credentials without delete rights are fine.
            log.warning("could not delete the preflight probe s3://%s/%s: %s", bucket, probe, err)
        log.info("S3 transfer ready: %s at %s", self.destination, self.endpoint)

    def _explain(self, err: Exception) -> str:
        where = f"S3 bucket {self.destination.bucket!r} at {self.endpoint}"
        return f"cannot upload to {where}: {_hint(classify(err), self.destination.bucket)}"


def _client(config: Config):
    """An S3 client with ``config``; S3TransferError when the environment names a bad endpoint."""
    try:
        return make_client(config)
    except ValueError as err:  # e.g. "Invalid endpoint" from AWS_ENDPOINT_URL
        raise S3TransferError(f"cannot create the S3 client: {err}") from err


def _hint(failure: S3Failure, bucket: str) -> str:
    """What to fix, for an upload that failed with ``failure``."""
    fault = failure.fault
    if fault is S3Fault.NO_CREDENTIALS:
        return "no usable AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
    if fault is S3Fault.TIMEOUT:
        return (
            f"the endpoint took the connection but sent no answer within "
            f"{PREFLIGHT_TIMEOUT_S:g} s: check that AWS_ENDPOINT_URL names an S3 server"
        )
    if fault in (S3Fault.UNREACHABLE, S3Fault.BROKEN):
        return (
            f"endpoint unreachable ({failure.message}): check AWS_ENDPOINT_URL and the "
            "network, and that the S3 server is running"
        )
    if fault in (S3Fault.NO_BUCKET, S3Fault.NOT_FOUND):
        return (
            f"the bucket does not exist: create it (e.g. `aws s3 mb s3://{bucket}`) "
            f"or fix {URI_ENV}"
        )
    if fault is S3Fault.DENIED:
        return (
            f"access denied ({failure.code}): check the credentials (AWS_ACCESS_KEY_ID/"
            "AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and that they may write to this bucket"
        )
    if fault is S3Fault.REFUSED:
        return f"S3 answered {failure.answer}: {failure.message}"
    return failure.message


_lock = threading.Lock()
_uploader: _Uploader | None = None


def _current() -> _Uploader:
    """The process's uploader, built from the environment on first use."""
    global _uploader
    with _lock:
        if _uploader is None:
            _uploader = _Uploader(location_from_env())
        return _uploader


def save_to_s3(source_path: str | os.PathLike[str], relative_path: str) -> bool:
    """Upload ``source_path`` to ``<prefix>/<relative_path>`` unless unchanged.

    Returns whether the file was sent. Upload errors propagate for the runner
    to retry.
    """
    return _current().upload(Path(source_path), relative_path)


def check_uploads() -> None:
    """Check once at start-up that uploads can work; S3TransferError says what to fix."""
    _current().check()


save_to_s3.preflight = check_uploads  # type: ignore[attr-defined]
