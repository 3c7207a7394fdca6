"""``s3://bucket/prefix`` locations: where uploads go and where the visualizer reads (no boto3)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from transfer_plugins.common import checked_relative

SCHEME = "s3://"
FORM = "s3://<bucket>/<prefix>"
# S3's bucket names, with the upper case and '_' older buckets (and other S3 servers) allow.
_BUCKET = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix; ``prefix`` is empty or ends in ``/``, with no leading ``/``.

    The trailing slash makes ``prefix`` what a listing of the objects under it
    asks for, and ``prefix + name`` the key of a file directly under it.
    """

    bucket: str
    prefix: str = ""

    def __post_init__(self) -> None:
        if not self.bucket or "/" in self.bucket:
            raise ValueError(f"not an S3 bucket name: {self.bucket!r}")
        prefix = self.prefix.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        object.__setattr__(self, "prefix", prefix)

    @classmethod
    def parse(cls, url: str) -> S3Location:
        """The location of an ``s3://bucket/prefix`` URL; ValueError says what is wrong."""
        text = str(url).strip()  # the line's ends (a pasted newline), never a key's inner spaces
        if not text.startswith(SCHEME):
            scheme, sep, _ = text.partition("://")
            if sep:
                hint = f"{scheme}:// is not S3; name the bucket as {FORM}"
                if scheme in ("http", "https"):
                    hint += " and give the server's address in AWS_ENDPOINT_URL"
            else:
                hint = "it does not start with s3://"
                if text and text[0] not in "/.~":
                    hint += f" (did you mean s3://{text}?)"
            raise ValueError(f"{text!r} is not of the form {FORM}: {hint}")
        bucket, _, prefix = text[len(SCHEME) :].partition("/")
        if not bucket:
            raise ValueError(f"{text!r} is not of the form {FORM}: it names no bucket")
        if not _BUCKET.fullmatch(bucket):
            raise ValueError(
                f"{text!r} is not of the form {FORM}: {bucket!r} is not a bucket name "
                "(letters, digits, '.', '-' and '_' only)"
            )
        # The prefix is taken as written, as S3 keys are: spaces, '?', '#' and unicode
        # included (an s3:// URL is no http URL: nothing in it is a query or a fragment).
        return cls(bucket, prefix)

    def key(self, relative_path: str) -> str:
        """Object key of a file at ``relative_path`` under the prefix.

        ValueError for a path that is empty, absolute or climbs out with ``..``.
        """
        return self.prefix + str(checked_relative(relative_path))

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}"

    @property
    def run_name(self) -> str:
        """``<name>`` of ``.../<name>/pickle/``, else the last part of the prefix (or the bucket)."""
        parts = [part for part in self.prefix.split("/") if part]
        if len(parts) >= 2 and parts[-1] == "pickle":
            return parts[-2]
        return parts[-1] if parts else self.bucket
