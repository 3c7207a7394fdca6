"""Read a snapshot store straight from S3-compatible storage (AWS, MinIO, SeaweedFS, Ceph).

:class:`S3Source` implements the reader's ``Source`` protocol: one LIST per
poll, and a ranged GET from the offset already read for a grown object, so a
follower downloads each byte once. Credentials and the endpoint come from
boto3's standard chain (``AWS_ENDPOINT_URL`` for non-AWS servers).
"""

from __future__ import annotations

import logging
from typing import Any

from transfer_plugins.s3_location import SCHEME, S3Location

log = logging.getLogger(__name__)


def is_s3_url(text: str) -> bool:
    """True for ``s3://`` locations."""
    return str(text).startswith(SCHEME)


def make_client() -> Any:
    """A boto3 S3 client from the standard credential chain and ``AWS_ENDPOINT_URL``."""
    import boto3  # only S3 users need boto3 imported
    from botocore.config import Config

    # Path-style addressing: MinIO/SeaweedFS/Ceph endpoints are rarely set up
    # for virtual-host buckets; AWS accepts both.
    return boto3.client(
        "s3", config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3})
    )


class S3Source:
    """One store under an S3 prefix, as the reader's ``Source``."""

    def __init__(self, location: S3Location | str, client: Any = None) -> None:
        self.location = S3Location.parse(location) if isinstance(location, str) else location
        self.client = client if client is not None else make_client()

    def describe(self, name: str) -> str:
        return f"{self.location}{name}"

    def list(self) -> dict[str, tuple]:
        """Objects directly under the prefix: name -> (size, etag). One LIST request per 1000 objects."""
        found: dict[str, tuple] = {}
        kwargs = {"Bucket": self.location.bucket, "Prefix": self.location.prefix, "Delimiter": "/"}
        while True:
            page = self.client.list_objects_v2(**kwargs)
            for obj in page.get("Contents", ()):
                name = obj["Key"][len(self.location.prefix) :]
                if name and not name.startswith("."):
                    found[name] = (obj["Size"], obj.get("ETag", ""))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return found
            kwargs["ContinuationToken"] = token

    def read(self, name: str, offset: int = 0) -> bytes:
        """Bytes of ``name`` from ``offset``: a ranged GET, so only new bytes travel."""
        from botocore.exceptions import ClientError

        kwargs = {"Bucket": self.location.bucket, "Key": self.location.key(name)}
        if offset:
            kwargs["Range"] = f"bytes={offset}-"
        try:
            response = self.client.get_object(**kwargs)
        except ClientError as err:
            code = err.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404"):
                raise FileNotFoundError(self.describe(name)) from None
            if code in ("InvalidRange", "416"):
                return b""  # nothing past the offset (yet)
            raise OSError(f"{self.describe(name)}: {code or err}") from None
        with response["Body"] as body:
            return body.read()
