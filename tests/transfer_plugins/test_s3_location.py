"""S3Location: the one ``s3://bucket/prefix`` type of uploads and of the visualizer."""

from __future__ import annotations

import dataclasses

import pytest

from transfer_plugins.s3_location import S3Location


@pytest.mark.parametrize(
    "url, bucket, prefix",
    [
        ("s3://bkt", "bkt", ""),
        ("s3://bkt/", "bkt", ""),
        ("s3://bkt/runs", "bkt", "runs/"),
        ("s3://bkt/runs/", "bkt", "runs/"),
        ("  s3://bkt/some/prefix/exp1/pickle ", "bkt", "some/prefix/exp1/pickle/"),
        # keys as S3 allows them: nothing is a query or a fragment
        ("s3://bkt/my runs/run #1?v=2/pickle", "bkt", "my runs/run #1?v=2/pickle/"),
        ("s3://Old_bkt/ünïcode %20 runs", "Old_bkt", "ünïcode %20 runs/"),
    ],
)
def test_parse_gives_a_prefix_that_is_empty_or_ends_in_a_slash(url, bucket, prefix):
    location = S3Location.parse(url)

    assert (location.bucket, location.prefix) == (bucket, prefix)
    assert str(location) == f"s3://{bucket}/{prefix}"
    assert S3Location.parse(str(location)) == location


def test_constructed_locations_are_normalised_the_same_way():
    assert S3Location("bkt", "/a/b") == S3Location.parse("s3://bkt/a/b/")
    assert S3Location("bkt") == S3Location.parse("s3://bkt")
    with pytest.raises(ValueError, match="not an S3 bucket name"):
        S3Location("bkt/with/slash")
    with pytest.raises(dataclasses.FrozenInstanceError):
        S3Location("bkt").prefix = "x/"  # type: ignore[misc]


@pytest.mark.parametrize(
    "url, hint",
    [
        (
            "my-bucket/prefix",
            r"it does not start with s3:// \(did you mean s3://my-bucket/prefix\?\)",
        ),
        ("https://my-bucket/prefix", "https:// is not S3.*AWS_ENDPOINT_URL"),
        ("s3://", "it names no bucket"),
        ("s3:///prefix", "it names no bucket"),
        ("/local/path", "it does not start with s3://$"),
        ("s3://my bucket/runs", "'my bucket' is not a bucket name"),
        ("s3://bkt#1/runs", "'bkt#1' is not a bucket name"),
    ],
)
def test_parse_says_what_is_wrong(url, hint):
    with pytest.raises(ValueError, match=rf"is not of the form s3://<bucket>/<prefix>: {hint}"):
        S3Location.parse(url)


def test_key_joins_prefix_and_relative_path():
    assert (
        S3Location.parse("s3://bkt/runs").key("exp/pickle/meta.pickle")
        == "runs/exp/pickle/meta.pickle"
    )
    assert S3Location.parse("s3://bkt").key("exp/latest.pth") == "exp/latest.pth"


@pytest.mark.parametrize("relative", ["../escape.pickle", "/etc/passwd", "", "myrun/../../x"])
def test_key_refuses_paths_that_leave_the_prefix(relative):
    with pytest.raises(ValueError, match="not a relative POSIX path"):
        S3Location.parse("s3://bkt/runs").key(relative)


@pytest.mark.parametrize(
    "url, name",
    [
        ("s3://bkt/team/exp1/pickle", "exp1"),
        ("s3://bkt/exp2/", "exp2"),
        ("s3://bkt/pickle", "pickle"),
        ("s3://bkt", "bkt"),
    ],
)
def test_run_name(url, name):
    assert S3Location.parse(url).run_name == name
