"""Plain values and secret redaction: what store documents may hold."""

from __future__ import annotations

import enum
from pathlib import Path

import numpy as np

from snapshot_store import frames as fmt
from snapshot_store.values import REDACTED, plain, redact


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
