"""Plain values and secret redaction: what store documents may hold."""

from __future__ import annotations

import enum
from pathlib import Path

import numpy as np
import pytest

from run_core.redaction import REDACTED, is_secret_name, redact, redact_text
from run_core.values import plain
from snapshot_store.format import frames as fmt


class _Mode(enum.IntEnum):
    FAST = 2


class _Name(str, enum.Enum):  # noqa: UP042 - the mixin users still write; str() of it is 'Cls.NAME'
    RUN = "run-1"


def test_plain_keeps_builtins_and_converts_the_rest():
    value = {
        "none": None,
        "flag": True,
        "n": 3,
        "x": 0.5,
        "s": "text",
        "b": b"raw",
        1: "int key",
        "tuple": (1, (2, 3)),
        "set": {4},
        "frozen": frozenset({5}),
        "path": Path("/data/run"),
        "class": object,
        "nested": {"deep": [Path("x")]},
    }

    out = plain(value)

    assert out == {
        "none": None,
        "flag": True,
        "n": 3,
        "x": 0.5,
        "s": "text",
        "b": b"raw",
        "1": "int key",
        "tuple": [1, [2, 3]],
        "set": [4],
        "frozen": [5],
        "path": "/data/run",
        "class": str(object),
        "nested": {"deep": ["x"]},
    }
    assert fmt.loads(fmt.dumps(out)) == out  # loadable by the restricted unpickler


def test_plain_turns_subclasses_of_builtins_into_the_builtin():
    # Each would pickle as a global that the restricted unpickler refuses.
    out = plain([np.float64(1.5), _Mode.FAST, _Name.RUN])

    assert out == [1.5, 2, "run-1"]
    assert [type(v) for v in out] == [float, int, str]
    fmt.loads(fmt.dumps(out))


def test_redact_hides_secrets_at_any_depth_and_keeps_plain_values():
    out = redact(
        {
            "lr": 0.1,
            "aws_secret_access_key": "abc",
            "password": "p",
            "nested": {"api_token": "t", "ok": 1},
            "hooks": [{"auth": "x", "name": "s3"}],
            "path": object,
        }
    )

    assert out["lr"] == 0.1 and out["aws_secret_access_key"] == REDACTED
    assert out["password"] == REDACTED
    assert out["nested"] == {"api_token": REDACTED, "ok": 1}
    assert out["hooks"] == [{"auth": REDACTED, "name": "s3"}]
    assert isinstance(out["path"], str)
    fmt.loads(fmt.dumps(out))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://alice:PW@host:8097", "http://alice:***@host:8097"),
        ("https://TOKEN@github.com/o/r", "https://***@github.com/o/r"),
        ("redis://:PW@h:6379/0", "redis://:***@h:6379/0"),
        ("http://u:p@ss@host/x", "http://u:***@host/x"),  # an unescaped '@' in the password
        ("env?token=X&page=2", "env?token=***&page=2"),
        ("https://h/p?X-Amz-Signature=abc#top", "https://h/p?X-Amz-Signature=***#top"),
        ("AWS_SECRET_ACCESS_KEY=abc AWS_REGION=eu", "AWS_SECRET_ACCESS_KEY=*** AWS_REGION=eu"),
        ("api_key='X': not allowed", "api_key='***': not allowed"),
        ("{'password': 'X', 'lr': 0.1}", "{'password': '***', 'lr': 0.1}"),
        ('at "http://user:PW@127.0.0.1:9/b"', 'at "http://user:***@127.0.0.1:9/b"'),
    ],
)
def test_redact_text_hides_url_logins_and_secret_parameters(text, expected):
    assert redact_text(text) == expected


@pytest.mark.parametrize(
    "text",
    ["mail alice@example.com", "http://127.0.0.1:8097/env/main", "lr=0.1 monkey=3 author=me", ""],
)
def test_redact_text_leaves_text_without_secrets_alone(text):
    assert redact_text(text) == text


def test_redact_applies_the_text_rule_to_every_string_value():
    out = redact(
        {
            "display_server": "http://alice:PW@host",
            "display_env": "env?token=X",
            "hooks": ["https://T@h/p"],
            "api_key": None,  # nothing to hide: an unset secret stays visibly unset
        }
    )

    assert out == {
        "display_server": "http://alice:***@host",
        "display_env": "env?token=***",
        "hooks": ["https://***@h/p"],
        "api_key": None,
    }


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("apiKey", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("session_token", True),
        ("credentials", True),
        ("key", True),
        ("Authorization", True),
        ("keyword", False),
        ("monkey", False),
        ("author", False),
        ("display_server", False),
        ("lr", False),
    ],
)
def test_is_secret_name(name, secret):
    assert is_secret_name(name) is secret
