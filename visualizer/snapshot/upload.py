"""``--out s3://bucket/prefix/report.html``: the snapshot uploaded, and a presigned link to it.

The file goes up in one PutObject, which S3 stores whole or not at all: a failed upload
leaves no part of it (and an older object under the key as it was). The client is the
visualizer's own (:func:`~visualizer.sources.s3.make_read_client`: boto3's standard
credential chain, ``AWS_ENDPOINT_URL`` for S3-compatible servers, path-style addressing,
a short connect timeout), signing with SigV4, whose presigned URLs last 7 days at most.
Failures are classified once (:func:`transfer_plugins.s3_client.classify`) and worded here
for an upload: one line naming the bucket or the endpoint and what to do.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from run_core.exit_codes import ExitCode
from transfer_plugins.s3_client import S3Fault, classify, make_client
from transfer_plugins.s3_location import SCHEME, S3Location
from visualizer.sources.s3 import make_read_client

# S3's SigV4 limit on a presigned URL's life (X-Amz-Expires), in seconds.
MAX_EXPIRES_S = 7 * 24 * 3600
DEFAULT_EXPIRES = "7d"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+)([smhd])")
CONTENT_TYPE = "text/html; charset=utf-8"


class SnapshotUploadError(Exception):
    """The upload failed: one line naming the cause and what to do; ``exit_code`` the status."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def expires(text: str) -> int:
    """``--expires``'s type: ``7d``, ``12h``, ``30m``, ``90s`` as seconds, at most 7 days."""
    match = _DURATION.fullmatch(text.strip().lower())
    seconds = int(match[1]) * _UNITS[match[2]] if match else 0
    if not match or seconds <= 0:
        raise argparse.ArgumentTypeError(
            f"a time such as 7d, 12h or 30m (a number and d, h, m or s), not {text!r}"
        )
    if seconds > MAX_EXPIRES_S:
        raise argparse.ArgumentTypeError(
            f"at most 7d: S3's presigned links (SigV4) last 7 days at most, not {text!r}"
        )
    return seconds


def is_s3_target(text: str) -> bool:
    """True when ``--out`` names an S3 object rather than a local file."""
    return str(text).strip().startswith(SCHEME)


def target(text: str) -> tuple[str, str]:
    """The bucket and key of ``s3://bucket/prefix/report.html``; ValueError names what is
    wrong (no bucket, or no file name after it)."""
    location = S3Location.parse(text)
    key = location.prefix.rstrip("/")
    if not key or str(text).strip().endswith("/"):
        raise ValueError(
            f"{text.strip()!r} names no file: give the object's key, "
            f"as in s3://{location.bucket}/{location.prefix}report.html"
        )
    return location.bucket, key


def _endpoint(client: Any) -> str:
    return str(getattr(client.meta, "endpoint_url", "") or "the S3 endpoint")


def _explain(err: Exception, bucket: str, key: str, client: Any) -> SnapshotUploadError:
    """The one line for ``err`` met uploading ``s3://bucket/key``."""
    failure = classify(err)
    where = f"s3://{bucket}/{key} at {_endpoint(client)}"
    fault = failure.fault
    if fault is S3Fault.NO_CREDENTIALS:
        text = f"no usable AWS credentials to upload {where}: set AWS_ACCESS_KEY_ID and "
        text += "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
        return SnapshotUploadError(text, ExitCode.USAGE)
    if fault in (S3Fault.UNREACHABLE, S3Fault.TIMEOUT, S3Fault.BROKEN):
        text = f"can not reach the S3 endpoint {_endpoint(client)} ({type(err).__name__}): "
        text += "check AWS_ENDPOINT_URL, the network, and that the S3 server is running"
        return SnapshotUploadError(text, ExitCode.UNAVAILABLE)
    if fault in (S3Fault.NO_BUCKET, S3Fault.NOT_FOUND):
        text = f"bucket {bucket!r} does not exist at {_endpoint(client)}: create it "
        text += f"(`aws s3 mb s3://{bucket}`) or fix --out (and AWS_ENDPOINT_URL)"
        return SnapshotUploadError(text, ExitCode.NO_DATA)
    if fault is S3Fault.DENIED:
        text = f"access denied uploading {where} ({failure.answer}): check AWS_ACCESS_KEY_ID "
        text += "and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) and that they may write there"
        return SnapshotUploadError(text, ExitCode.USAGE)
    return SnapshotUploadError(
        f"uploading {where} failed ({failure.answer}): {failure.message}; nothing was uploaded",
        ExitCode.UNAVAILABLE,
    )


def upload_client() -> Any:
    """The visualizer's S3 client (:func:`~visualizer.sources.s3.make_read_client`'s
    settings), signing presigned URLs with SigV4 (boto3 presigns with SigV2 unless told)."""
    from botocore.config import Config

    return make_client(make_read_client().meta.config.merge(Config(signature_version="s3v4")))


def upload(body: bytes, url: str, expires_s: int, client: Any = None) -> str:
    """Put ``body`` at ``url`` (``s3://bucket/key``) in one request; the presigned GET URL
    that opens it for ``expires_s`` seconds. SnapshotUploadError on any failure."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, key = target(url)
    try:
        client = client or upload_client()
    except ValueError as err:  # a malformed AWS_ENDPOINT_URL
        raise SnapshotUploadError(
            f"can not make the S3 client: {err}; check AWS_ENDPOINT_URL", ExitCode.USAGE
        ) from None
    try:
        client.put_object(Bucket=bucket, Key=key, Body=body, ContentType=CONTENT_TYPE)
        link = client.generate_presigned_url(
            "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires_s
        )
    except (BotoCoreError, ClientError) as err:
        raise _explain(err, bucket, key, client) from err
    return str(link)
