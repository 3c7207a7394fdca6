"""W&B's "Track experiments" tutorial, run unchanged (``wandb.require``, ``wandb.login``,
``wandb.log_model`` each epoch) under W&B offline and under our module: its 9 runs, their
metrics and their model artifacts (names, types, aliases, manifests and digests) equal."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshot_store.format.artifacts import manifest_digest
from tests.fixtures.runs.wandb_files import (
    read_wandb_file,
    run_under_both,
    stored_run,
    wandb_artifacts,
)

SCRIPT = Path(__file__).with_name("wandb_experiments.py")
PROJECTS = ("basic-intro", "pytorch-intro")


def _ours(store: Path) -> tuple[dict, list[dict]]:
    run = stored_run(store)
    logged = [
        {
            "name": data["name"], "type": data["type"], "digest": data["digest"],
            "aliases": sorted(data["aliases"]),
            "files": {f["path"]: (f["digest"], f["size"]) for f in data["files"]},
        }
        for kind, _tag, _step, data in run["extras"]
        if kind == "artifact"
    ]  # fmt: skip
    return run, logged


def _key(name: str, config: dict) -> tuple[str, float]:
    return (name if name.startswith("experiment_") else "", config.get("dropout", -1.0))


@pytest.mark.integration
def test_the_track_experiments_tutorial_makes_wandbs_runs_and_model_artifacts(tmp_path):
    ref, ours = run_under_both(SCRIPT, tmp_path)
    # Runs matched by what tells them apart: the simulated ones' names, the others' random
    # dropout (W&B names those at random, this module by the time).
    theirs = sorted(
        (_key(run["name"], run["config"]), run, path)
        for path in ref.glob("wandb/offline-run-*/run-*.wandb")
        for run in [read_wandb_file(path)]
    )
    mine = sorted(
        (_key(store.parent.name, run["options"]), run, logged)
        for project in PROJECTS
        for store in (ours / "wandb" / project).glob("*/pickle")
        for run, logged in [_ours(store)]
    )
    assert [key for key, *_ in theirs] == [key for key, *_ in mine] and len(mine) == 9
    # W&B also keeps each logged wandb.Table as an artifact of its own (type run_table): the
    # store keeps tables as tables (test_wandb_table.py), so those are not compared here.
    artifacts = [
        ([a for a in wandb_artifacts(path) if a["type"] != "run_table"], logged)
        for (_key_, _run, path), (_k, _r, logged) in zip(theirs, mine, strict=True)
    ]
    assert sorted(len(t) for t, _m in artifacts) == [0] * 6 + [5] * 3
    for their, my in artifacts:
        assert my == their
    # the checkpoint of each epoch: one file, W&B's digests, its own alias and latest
    first = next(my for _their, my in artifacts if my)[0]
    assert list(first["files"]) == ["my_model.pt"] and first["type"] == "model"
    assert first["aliases"][0].startswith("epoch-1_dropout-") and "latest" in first["aliases"]
    entries = [{"path": p, "digest": d} for p, (d, _size) in first["files"].items()]
    assert manifest_digest(entries) == first["digest"]
    for (_k, theirs_run, path), (_k2, run, _logged) in zip(theirs, mine, strict=True):
        history = theirs_run["history"]  # the metrics too, as W&B stored them
        for key in ("acc", "loss", "val/val_accuracy", "val/val_loss", "Accuracy"):
            if key in history:
                assert run["history"][key] == pytest.approx(history[key], rel=1e-5), (path, key)
