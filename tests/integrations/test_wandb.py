"""remote_train_monitor.wandb: a W&B script, its import changed, stores what W&B logs.

The reference is W&B itself: the same script runs with ``import wandb`` (offline mode,
no account, no network), and its run file is read back beside our store.
"""

from __future__ import annotations

import json
import struct
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from snapshot_store import read_store
from tests.integrations.helpers import run_example
from tests.trainer.helpers import REPO

MNIST = Path(__file__).with_name("wandb_mnist.py")
BLOCK = 32768  # W&B's run file: LevelDB log blocks of records


def _wandb_records(path: Path) -> list[bytes]:
    """The records of a W&B run file (a LevelDB log after a 7-byte header)."""
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    pos, records, part = 7, [], b""
    while pos + 7 <= len(data):
        if BLOCK - pos % BLOCK < 7:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        part += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            records.append(part)
            part = b""
    return records


def wandb_run(root: Path, timeout: float = 60) -> dict[str, Any]:
    """History ``{key: {step: value}}``, config and final summary of the W&B run under ``root``.

    W&B's service writes the file on after the script exits: wait for its exit record.
    """
    from wandb.proto import wandb_internal_pb2 as pb

    [path] = root.glob("wandb/offline-run-*/run-*.wandb")
    deadline = time.monotonic() + timeout
    while True:
        parsed = (
            [pb.Record.FromString(r) for r in _wandb_records(path)] if path.stat().st_size else []
        )
        if any(r.WhichOneof("record_type") == "exit" for r in parsed):
            break
        assert time.monotonic() < deadline, f"W&B did not finish writing {path}"
        time.sleep(0.2)
    history: dict[str, dict[int, Any]] = {}
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    for record in parsed:
        kind = record.WhichOneof("record_type")
        if kind == "history":
            row: dict[str, Any] = {}
            for item in record.history.item:
                head, *rest = [item.key] if item.key else list(item.nested_key)
                value = json.loads(item.value_json)
                if rest:  # a media value's fields (its type, size, count...)
                    row.setdefault(head, {})[".".join(rest)] = value
                else:
                    row[head] = value
            step = row.pop("_step")
            for key, value in row.items():
                if not key.startswith("_"):
                    history.setdefault(key, {})[step] = value
        elif kind == "config":
            for item in record.config.update:
                key = item.key or ".".join(item.nested_key)
                if not key.startswith("_"):
                    config[key] = json.loads(item.value_json)
        elif kind == "summary":
            for item in record.summary.update:
                summary[item.key or ".".join(item.nested_key)] = json.loads(item.value_json)
    return {"history": history, "config": config, "summary": summary}


def stored_run(store: Path) -> dict[str, Any]:
    """Our store as W&B's keys: ``{key: {step: value}}`` (images: their size), options, extras."""
    history, reader, update = read_store(store)
    assert reader.warnings == []
    keys: dict[str, dict[int, Any]] = {}
    for group, name in history.keys():
        steps, _epochs, _walls, values = history.series((group, name))
        keys[name if group == "scalars" else f"{group}/{name}"] = dict(
            zip(steps, values, strict=True)
        )
    from snapshot_store.images import decode_png

    for _group, name, step, _epoch, _wall, png in update.images:
        keys.setdefault(name, {})[step] = decode_png(png).shape
    extras = [(kind, tag, step, data) for kind, tag, step, _w, data in update.extras]
    return {
        "history": keys,
        "options": update.meta["options"],
        "extras": extras,
        "status": update.status,
    }


def _run_both(script: Path, tmp_path: Path, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The script under W&B (offline) and under our module; both runs read back."""
    env = {"WANDB_PROJECT": "p", "WANDB_NAME": "n", "WANDB_SILENT": "true"}
    run_example([sys.executable, str(script), "wandb", *args], tmp_path / "ref", WANDB_MODE="offline",
                WANDB_DIR=str(tmp_path / "ref"), **env)  # fmt: skip
    run_example([sys.executable, str(script), "remote_train_monitor.wandb", *args], tmp_path / "ours",
                WANDB_DIR=str(tmp_path / "ours"), PYTHONPATH=str(REPO), **env)  # fmt: skip
    return wandb_run(tmp_path / "ref"), stored_run(
        tmp_path / "ours" / "wandb" / "p" / "n" / "pickle"
    )


@pytest.mark.integration
def test_wandbs_mnist_example_stores_wandbs_keys_steps_and_values(tmp_path):
    (tmp_path / "ref").mkdir()
    (tmp_path / "ours").mkdir()
    ref, ours = _run_both(MNIST, tmp_path, "--epochs", "2")
    assert set(ours["history"]) == set(ref["history"]) == {
        "batch_loss", "Examples", "Test Accuracy", "Test Loss",
    }  # fmt: skip
    for key in ("batch_loss", "Test Accuracy", "Test Loss"):
        assert ours["history"][key] == pytest.approx(ref["history"][key], rel=1e-6), key
    assert sorted(ours["history"]["Examples"]) == sorted(ref["history"]["Examples"]) == [4, 9]
    examples = ref["history"]["Examples"][4]
    assert (examples["count"], examples["height"], examples["width"]) == (4, 28, 28)
    assert ours["history"]["Examples"][4][:2] == (28, 4 * 28)  # the four tiled in a row
    assert ours["options"] == ref["config"] and ours["options"]["lr"] == 0.05
    [(kind, tag, step, row)] = [e for e in ours["extras"] if e[0] == "hparams"]
    assert (kind, tag, step) == ("hparams", "n", 10) and row["hparams"] == ref["config"]
    numeric = {
        k: v for k, v in ref["summary"].items() if not k.startswith("_") and isinstance(v, float)
    }
    assert row["metrics"] == pytest.approx(numeric) and ours["status"]["state"] == "finished"
