"""Helpers for the framework logger tests: run an example as a user would, read its store."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from snapshot_store import History, read_store
from tests.trainer.helpers import REPO, clean_env
from visualizer.export import export_csv, export_jsonl

EXAMPLES = REPO / "examples"


def run_example(cmd: list[str], cwd: Path, timeout: float = 280, **env: str) -> str:
    """Run ``cmd`` in ``cwd`` with the repository importable; its output, or fail with it."""
    proc = subprocess.run(
        cmd, cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=timeout
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def read(store: Path) -> tuple[History, dict[str, Any], dict[str, Any]]:
    """``(history, meta, status)`` of a finished store; fails on any reader warning."""
    history, reader, update = read_store(store)
    assert reader.warnings == []
    assert update.meta is not None and update.status is not None
    return history, update.meta, update.status


Points = dict[str, dict[int, float]]  # tag -> {step: value}


def _accumulators(logdir: Path) -> list[EventAccumulator]:
    """One loaded EventAccumulator per event file under ``logdir`` (every point kept)."""
    out = []
    for events in sorted(logdir.rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0, "tensors": 0, "images": 0})
        acc.Reload()
        out.append(acc)
    assert out, f"no TensorBoard event file under {logdir}"
    return out


def tensorboard_scalars(logdir: Path) -> Points:
    """Every scalar TensorBoard wrote under ``logdir``, as read back by its EventAccumulator.

    A step written twice (Lightning's ``epoch`` at a train and a validation log of
    one step) must hold one value: the store keeps one value per step.
    """
    out: Points = {}
    for acc in _accumulators(logdir):
        for tag in acc.Tags()["scalars"]:
            for event in acc.Scalars(tag):
                points = out.setdefault(tag, {})
                assert points.get(event.step, event.value) == event.value, (tag, event)
                points[event.step] = event.value
    return out


def tensorboard_texts(logdir: Path) -> dict[str, dict[int, str]]:
    """Every text TensorBoard wrote under ``logdir``: tag (without ``/text_summary``) -> {step: text}."""
    out: dict[str, dict[int, str]] = {}
    for acc in _accumulators(logdir):
        for tag in acc.Tags()["tensors"]:
            if tag.endswith("/text_summary"):
                for event in acc.Tensors(tag):
                    text = event.tensor_proto.string_val[0].decode()
                    out.setdefault(tag.removesuffix("/text_summary"), {})[event.step] = text
    return out


def tensorboard_images(logdir: Path) -> dict[str, list[int]]:
    """The steps of every image TensorBoard wrote under ``logdir``, by tag."""
    out: dict[str, list[int]] = {}
    for acc in _accumulators(logdir):
        for tag in acc.Tags()["images"]:
            out.setdefault(tag, []).extend(event.step for event in acc.Images(tag))
    return {tag: sorted(steps) for tag, steps in out.items()}


def exported_scalars(store: Path) -> Points:
    """Every scalar of ``store`` as ``python -m visualizer export`` writes it, values rounded
    to float32 as TensorBoard stores them."""
    out = io.StringIO()
    export_csv(str(store), out)
    points: Points = {}
    for row in csv.DictReader(io.StringIO(out.getvalue())):
        value = float(np.float32(float(row["value"])))
        points.setdefault(row["tag"], {})[int(row["step"])] = value
    return points


def exported_records(store: Path, kind: str) -> dict[str, dict[int, Any]]:
    """The ``kind`` records of ``store`` as ``export --kind KIND`` writes them: tag -> {step: data}."""
    out = io.StringIO()
    export_jsonl(str(store), out, kind)
    records: dict[str, dict[int, Any]] = {}
    for line in out.getvalue().splitlines():
        record = json.loads(line)
        records.setdefault(record["tag"], {})[record["step"]] = record["data"]
    return records
