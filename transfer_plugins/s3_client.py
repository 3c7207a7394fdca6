"""The one S3 client factory and S3 error classification, for uploads and the visualizer's reads.

Both sides word their messages for what they were doing (uploading, reading);
what a botocore error *means* is decided here once. boto3 is imported only when
a client is made or an error classified: the visualizer imports this module
whether or not it reads from S3. No torch and no trainer here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.config import Config

# "Forbidden" is what a HEAD request's bare 403 carries.
DENIED_CODES = frozenset(
    {"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "Forbidden"}
)


def make_client(config: Config) -> Any:
    """An S3 client with ``config``, from a boto3 session of its own (boto3's default is not thread-safe).

    Credentials and the endpoint come from boto3's standard chain
    (``AWS_ENDPOINT_URL`` for non-AWS servers). A malformed endpoint raises ValueError.
    """
    import boto3  # only S3 users need boto3 imported

    return boto3.session.Session().client("s3", config=config)


class S3Fault(enum.Enum):
    """What went wrong, as far as the caller's advice goes."""

    NO_CREDENTIALS = enum.auto()
    TIMEOUT = enum.auto()  # connected, and no answer came in time
    UNREACHABLE = enum.auto()  # no connection to the endpoint
    BROKEN = enum.auto()  # another HTTP failure, e.g. a connection broken mid-answer
    NO_BUCKET = enum.auto()
    NOT_FOUND = enum.auto()  # a bare 404 (a HEAD's answer): the bucket, or a key
    DENIED = enum.auto()
    REFUSED = enum.auto()  # any other error answer from S3
    OTHER = enum.auto()  # not an S3 or HTTP failure botocore names


@dataclass(frozen=True)
class S3Failure:
    """A classified botocore error: its fault, and S3's code, HTTP status and message."""

    fault: S3Fault
    code: str = ""
    status: int | None = None
    message: str = ""  # S3's message, else the error's own text

    @property
    def answer(self) -> str:
        """What S3 answered, for messages: its error code, else the HTTP status."""
        return self.code or str(self.status)


def classify(err: BaseException) -> S3Failure:
    """The :class:`S3Failure` that ``err`` (any exception, botocore's or not) stands for."""
    from botocore.exceptions import (
        ClientError,
        HTTPClientError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(err, (NoCredentialsError, PartialCredentialsError)):
        return S3Failure(S3Fault.NO_CREDENTIALS, message=str(err))
    if isinstance(err, ReadTimeoutError):
        return S3Failure(S3Fault.TIMEOUT, message=str(err))
    if isinstance(err, BotoConnectionError):
        return S3Failure(S3Fault.UNREACHABLE, message=str(err))
    if isinstance(err, HTTPClientError):
        return S3Failure(S3Fault.BROKEN, message=str(err))
    if not isinstance(err, ClientError):
        return S3Failure(S3Fault.OTHER, message=str(err))
    error = err.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "NoSuchBucket":
        fault = S3Fault.NO_BUCKET
    elif code == "404":
        fault = S3Fault.NOT_FOUND
    elif code in DENIED_CODES or status == 403:
        fault = S3Fault.DENIED
    else:
        fault = S3Fault.REFUSED
    return S3Failure(fault, code, status, str(error.get("Message") or err))
