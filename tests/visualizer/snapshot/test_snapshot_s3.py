"""``snapshot --out s3://...``: uploaded whole to a real S3 server (SeaweedFS), a presigned
link that opens the same bytes, and one line for a missing bucket, wrong credentials or an
endpoint that does not answer, with nothing uploaded."""

from __future__ import annotations

import argparse
import os
import types
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pytest

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from visualizer.__main__ import main
from visualizer.snapshot import content
from visualizer.snapshot.upload import MAX_EXPIRES_S, expires, target

KEY = "reports/run a.html"  # a space: the key is taken as written


@pytest.fixture
def root(tmp_path, monkeypatch):
    with Recorder(tmp_path / "runs" / "a" / "pickle", name="a") as rec:
        for step in range(20):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    # The page says when it was made: fixed, so two snapshots of the store are the same bytes.
    monkeypatch.setattr(content, "time", types.SimpleNamespace(time=lambda: 1.7e9))
    return tmp_path / "runs"


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    ("text", "seconds"), [("7d", MAX_EXPIRES_S), ("12h", 43200), ("30m", 1800), ("90s", 90)]
)
def test_expires_reads_a_number_and_a_unit(text, seconds):
    assert expires(text) == seconds


@pytest.mark.parametrize(("text", "says"), [("8d", "at most 7d"), ("169h", "at most 7d"),
                                            ("0m", "such as 7d"), ("a week", "such as 7d")])  # fmt: skip
def test_expires_past_seven_days_or_unreadable_is_refused(text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        expires(text)


def test_an_s3_out_names_a_file():
    assert target("s3://bkt/reports/r.html") == ("bkt", "reports/r.html")
    for bad in ("s3://bkt", "s3://bkt/reports/", "s3:///r.html"):
        with pytest.raises(ValueError):
            target(bad)


def test_an_expires_of_eight_days_is_a_usage_error(root, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["snapshot", "--pickle-dir", str(root), "--out", "s3://b/r.html", "--expires", "8d"])
    assert exit_.value.code == 2
    assert "--expires: at most 7d" in capsys.readouterr().err


def test_expires_without_an_s3_out_is_a_usage_error(root, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["snapshot", "--pickle-dir", str(root), "--out", str(tmp_path / "r.html"),
              "--expires", "1h"])  # fmt: skip
    assert "--expires is for an --out s3://" in capsys.readouterr().err


def test_the_link_opens_the_uploaded_file(root, tmp_path, s3_bucket, capsys):
    local = tmp_path / "r.html"
    assert main(["snapshot", "--pickle-dir", str(root), "--out", str(local)]) == ExitCode.OK
    capsys.readouterr()
    out = f"s3://{s3_bucket.name}/{KEY}"
    code = main(["snapshot", "--pickle-dir", str(root), "--out", out, "--expires", "12h"])
    assert code == ExitCode.OK
    captured = capsys.readouterr()
    link = captured.out.strip()
    assert f"uploaded {out}" in captured.err and "opens it for 12 hours" in captured.err
    query = parse_qs(urlsplit(link).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and query["X-Amz-Expires"] == ["43200"]
    with urllib.request.urlopen(link, timeout=10) as answer:  # no credentials: the link only
        assert answer.headers["Content-Type"].startswith("text/html")
        assert answer.read() == local.read_bytes()
    assert s3_bucket.keys() == [KEY]


def test_a_missing_bucket_is_one_line(root, s3_bucket, capsys):
    out = f"s3://{s3_bucket.name}-missing/r.html"
    assert main(["snapshot", "--pickle-dir", str(root), "--out", out]) == ExitCode.NO_DATA
    line = _one_line(capsys)
    assert f"bucket '{s3_bucket.name}-missing' does not exist" in line and "aws s3 mb" in line


def test_wrong_credentials_are_one_line_and_nothing_uploaded(root, s3_bucket, capsys, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    out = s3_bucket.uri("r.html")
    assert main(["snapshot", "--pickle-dir", str(root), "--out", out]) == ExitCode.USAGE
    line = _one_line(capsys)
    assert "access denied uploading" in line and "AWS_SECRET_ACCESS_KEY" in line
    assert s3_bucket.keys() == []


def test_an_endpoint_that_does_not_answer_is_one_line(root, capsys, monkeypatch):
    endpoint = f"http://127.0.0.1:{free_port()}"
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name, value in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k",
                        "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1",
                        "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull
                        }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    assert main(["snapshot", "--pickle-dir", str(root), "--out", "s3://b/r.html"]) == (
        ExitCode.UNAVAILABLE
    )
    line = _one_line(capsys)
    assert f"can not reach the S3 endpoint {endpoint}" in line and "AWS_ENDPOINT_URL" in line
