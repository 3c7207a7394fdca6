"""The shared S3 error classification: what each botocore error means, on both sides."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from transfer_plugins.s3_client import S3Fault, classify


def _answer(code: str, status: int, message: str = "") -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "HeadBucket",
    )


@pytest.mark.parametrize(
    ("err", "fault"),
    [
        (NoCredentialsError(), S3Fault.NO_CREDENTIALS),
        (ReadTimeoutError(endpoint_url="http://x"), S3Fault.TIMEOUT),
        (EndpointConnectionError(endpoint_url="http://x"), S3Fault.UNREACHABLE),
        (ResponseStreamingError(error="reset"), S3Fault.BROKEN),
        (_answer("NoSuchBucket", 404), S3Fault.NO_BUCKET),
        (_answer("404", 404), S3Fault.NOT_FOUND),
        (_answer("AccessDenied", 403), S3Fault.DENIED),
        (_answer("Whatever", 403), S3Fault.DENIED),
        (_answer("SlowDown", 503), S3Fault.REFUSED),
        (ValueError("no"), S3Fault.OTHER),
    ],
)
def test_each_error_has_one_meaning(err: Exception, fault: S3Fault) -> None:
    assert classify(err).fault is fault


def test_an_answer_keeps_s3s_code_status_and_message() -> None:
    failure = classify(_answer("SlowDown", 503, "reduce your request rate"))
    assert (failure.code, failure.status, failure.message) == (
        "SlowDown",
        503,
        "reduce your request rate",
    )
    assert failure.answer == "SlowDown"
    assert classify(_answer("", 500)).answer == "500"
