"""Read a snapshot store straight from S3-compatible storage (AWS, MinIO, SeaweedFS, Ceph).

:class:`S3Source` implements the reader's ``Source`` protocol: one LIST per
poll, and ranged GETs of bounded size from the offset already read, so a
follower downloads each byte once and never holds a whole object. Credentials
and the endpoint come from boto3's standard chain (``AWS_ENDPOINT_URL`` for
non-AWS servers). Every S3 failure becomes an :class:`S3ReadError` whose one
line names the cause and what to check.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from run_core.exit_codes import ExitCode
from transfer_plugins import s3_client
from transfer_plugins.s3_client import S3Fault
from transfer_plugins.s3_location import SCHEME, S3Location

log = logging.getLogger(__name__)


class S3ReadError(RuntimeError):
    """An S3 request failed; the message names the real cause, ``exit_code`` the status.

    ``one_run``: the answer is about the objects asked for (a bucket policy denying one
    run's prefix, a key deleted since it was listed), not the bucket, the endpoint or the
    credentials: readers of many runs skip that run, say so, and go on.
    """

    def __init__(self, message: str, exit_code: ExitCode, one_run: bool = False) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.one_run = one_run


def is_s3_url(text: str) -> bool:
    """True for ``s3://`` locations."""
    return str(text).startswith(SCHEME)


FETCHES_AT_ONCE = 32  # requests in flight to a bucket on its first read


def make_read_client() -> Any:
    """A boto3 S3 client for reading, from the standard credential chain and ``AWS_ENDPOINT_URL``."""
    from botocore.config import Config

    # Path-style addressing: MinIO/SeaweedFS/Ceph endpoints are rarely set up
    # for virtual-host buckets; AWS accepts both. Short connect timeout: an
    # unreachable endpoint is reported in seconds, not minutes.
    return s3_client.make_client(
        Config(
            s3={"addressing_style": "path"},
            retries={"max_attempts": 3},
            # A bucket's first read fetches this many runs' documents at once.
            max_pool_connections=FETCHES_AT_ONCE,
            connect_timeout=5,
            read_timeout=30,
        )
    )


# What a read that failed with each fault says, and the exit status it gives. Fields:
# location, endpoint, bucket, error (the error's type), answer (S3's code or status), message.
_READ_FAILURES: dict[S3Fault, tuple[str, ExitCode]] = {
    S3Fault.NO_CREDENTIALS: (
        "no usable AWS credentials to read {location}: set AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
        ExitCode.USAGE,
    ),
    S3Fault.UNREACHABLE: (
        "can not reach the S3 endpoint {endpoint} ({error}): check "
        "AWS_ENDPOINT_URL, the network, and that the S3 server is running",
        ExitCode.UNAVAILABLE,
    ),
    S3Fault.NO_BUCKET: (
        "bucket {bucket!r} does not exist at {endpoint}: check the s3:// URL (and AWS_ENDPOINT_URL)",
        ExitCode.NO_DATA,
    ),
    S3Fault.DENIED: (
        "access denied to {location} at {endpoint} ({answer}): these credentials may not "
        "read it; check the bucket policy for that prefix (and the IAM policy of "
        "AWS_ACCESS_KEY_ID or AWS_PROFILE)",
        ExitCode.USAGE,
    ),
    S3Fault.NOT_FOUND: (
        "S3 at {endpoint} answered {answer} for {location}: {message}",
        ExitCode.UNAVAILABLE,
    ),
}
_READ_FAILURES[S3Fault.REFUSED] = _READ_FAILURES[S3Fault.NOT_FOUND]
# Denied for keys the server does not know, or a signature a wrong secret made: whatever
# the prefix, these credentials read nothing (AccessDenied is a policy's answer).
_WRONG_CREDENTIALS = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch"})
_REJECTED = (
    "access denied to {location} at {endpoint} ({answer}): check AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE): the key is not known there, or the secret is wrong",
    ExitCode.USAGE,
)
_READ_FAILED = ("reading {location} from {endpoint} failed: {message}", ExitCode.UNAVAILABLE)
# Answers about the objects asked for, not the bucket or the endpoint (see S3ReadError.one_run).
_ONE_RUN = frozenset({S3Fault.DENIED, S3Fault.NOT_FOUND})


def explain(err: Exception, location: S3Location, client: Any) -> S3ReadError:
    """The one-line :class:`S3ReadError` for a botocore error met reading ``location``."""
    failure = s3_client.classify(err)
    template, exit_code = _READ_FAILURES.get(failure.fault, _READ_FAILED)
    one_run = failure.fault in _ONE_RUN
    if failure.code in _WRONG_CREDENTIALS:
        template, exit_code, one_run = *_REJECTED, False
    text = template.format(
        location=location,
        endpoint=_endpoint(client),
        bucket=location.bucket,
        error=type(err).__name__,
        answer=failure.answer,
        message=failure.message,
    )
    return S3ReadError(text, exit_code, one_run)


def _endpoint(client: Any) -> str:
    """The client's endpoint without credentials (``user:password@``) in it."""
    from urllib.parse import urlsplit

    url = str(getattr(getattr(client, "meta", None), "endpoint_url", "") or "the S3 endpoint")
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=host).geturl()


def call(client: Any, location: S3Location, operation: str, **kwargs: Any) -> Any:
    """``client.<operation>(**kwargs)``; botocore errors become one-line S3ReadErrors."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return getattr(client, operation)(**kwargs)
    except (BotoCoreError, ClientError) as err:
        raise explain(err, location, client) from err


# A listing's pages at most (S3 returns up to 1,000 keys a page): 2,000,000 keys, where a bucket
# of 100,000 runs lists in 100 (its run folders) to some 1,000 (every object).
MAX_LIST_PAGES = 2_000


def list_page(client: Any, location: S3Location, **kwargs: str) -> dict[str, Any]:
    """One ``ListObjectsV2`` page under ``location``'s prefix, its entries checked: an object
    without a text key or an integer size, a common prefix without a text prefix (which no S3
    sends, but a broken or hostile endpoint may) is left out, not met later as a KeyError."""
    page = call(
        client,
        location,
        "list_objects_v2",
        Bucket=location.bucket,
        Prefix=location.prefix,
        **kwargs,
    )
    contents, prefixes = page.get("Contents"), page.get("CommonPrefixes")
    page["Contents"] = [
        obj
        for obj in (contents if isinstance(contents, list) else ())
        if isinstance(obj, dict)
        and isinstance(obj.get("Key"), str)
        and type(obj.get("Size")) is int
    ]
    page["CommonPrefixes"] = [
        common
        for common in (prefixes if isinstance(prefixes, list) else ())
        if isinstance(common, dict) and isinstance(common.get("Prefix"), str)
    ]
    return page


_CUT: set[str] = set()  # the locations whose listing was cut: each is told once


def list_pages(client: Any, location: S3Location, **kwargs: str) -> Iterator[dict[str, Any]]:
    """The listing under ``location``'s prefix, page by page (:func:`list_page`): at most
    :data:`MAX_LIST_PAGES`, and ended there or where a continuation token comes again (a
    listing that would go on for ever: a broken or hostile endpoint), with one warning."""
    tokens: set[str] = set()
    why = f"stopped after {MAX_LIST_PAGES:,} pages ({MAX_LIST_PAGES * 1000:,} keys)"
    for _ in range(MAX_LIST_PAGES):
        page = list_page(client, location, **kwargs)
        yield page
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not isinstance(token, str) or not token:
            return
        if token in tokens:
            why = "stopped: the endpoint sent a continuation token again"
            break
        tokens.add(token)
        kwargs = {**kwargs, "ContinuationToken": token}
    if str(location) not in _CUT:
        _CUT.add(str(location))
        log.warning("listing %s: %s; the rest is not looked at", location, why)


class S3Source:
    """One store under an S3 prefix, as the reader's ``Source``."""

    def __init__(self, location: S3Location | str, client: Any = None) -> None:
        self.location = S3Location.parse(location) if isinstance(location, str) else location
        self.client = client if client is not None else make_read_client()

    def describe(self, name: str) -> str:
        return f"{self.location}{name}"

    def list(self) -> dict[str, tuple]:
        """Objects directly under the prefix: name -> (size, etag). One LIST request per 1000 objects."""
        found: dict[str, tuple] = {}
        for page in list_pages(self.client, self.location, Delimiter="/"):
            for obj in page["Contents"]:
                name = obj["Key"][len(self.location.prefix) :]
                if name and not name.startswith("."):
                    found[name] = (obj["Size"], obj.get("ETag", ""))
        return found

    def read(self, name: str, offset: int = 0, length: int | None = None) -> bytes:
        """At most ``length`` bytes of ``name`` from ``offset``: a ranged GET, so only those travel."""
        from botocore.exceptions import BotoCoreError

        kwargs = {"Bucket": self.location.bucket, "Key": self.location.key(name)}
        if length is not None:
            if length <= 0:
                return b""
            kwargs["Range"] = f"bytes={offset}-{offset + length - 1}"
        elif offset:
            kwargs["Range"] = f"bytes={offset}-"
        try:
            response = call(self.client, self.location, "get_object", **kwargs)
        except S3ReadError as err:
            code = s3_client.classify(err.__cause__).code if err.__cause__ else ""
            if code in ("NoSuchKey", "404"):
                raise FileNotFoundError(self.describe(name)) from None
            if code in ("InvalidRange", "416"):
                return b""  # nothing past the offset (yet)
            raise
        try:
            with response["Body"] as body:
                return body.read()
        except BotoCoreError as err:  # the connection broke mid-body
            raise explain(err, self.location, self.client) from err
