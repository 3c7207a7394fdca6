"""A trainer run's checkpoints as artifacts, and the one a ``--continue-train`` run used: in the
Api (W&B's ``logged_artifacts()``, ``used_artifacts()``) and in the run's page."""

from __future__ import annotations

import base64
import hashlib
import uuid
from pathlib import Path

import pytest
import torch

from tests.fixtures.runs.training import read_run, train_args
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from tests.visualizer.panes.test_extra_windows import table_cells
from trainer.command import cli
from visualizer.api import Api
from visualizer.panes.artifacts import ARTIFACTS_WIN

pytestmark = pytest.mark.xdist_group("checkpoint_artifacts")  # one worker trains the run once


def _md5(path: Path) -> str:
    return base64.b64encode(hashlib.md5(path.read_bytes()).digest()).decode()


@pytest.fixture(scope="module")
def resumed(tiny_dataset, tmp_path_factory) -> tuple[Path, str]:
    """One epoch, then one more with ``--continue-train``: the run dir and the checkpoint's
    file digest the second run loaded."""
    name = f"ck-{uuid.uuid4().hex[:6]}"  # its env on the shared visdom server is its own
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    args = train_args(
        tiny_dataset, checkpoints, name, "--batch-size", "16", "--save-epoch-freq", "1"
    )
    assert cli.main(["train", *args, "--n-epochs", "1"]) == 0
    loaded = _md5(checkpoints / name / "latest.pth")
    assert cli.main(["train", *args, "--n-epochs", "2", "--continue-train"]) == 0
    return checkpoints / name, loaded


def test_the_checkpoints_are_the_runs_logged_artifacts_and_the_resume_used_one(resumed, tmp_path):
    run_dir, loaded = resumed
    run = Api().run(str(run_dir))
    logged = run.logged_artifacts()
    name = f"{run_dir.name}-checkpoint"
    # Each epoch's latest, epoch_N and best hold the same bytes: one version, their aliases.
    assert [a.name for a in logged] == [f"{name}:v0", f"{name}:v1"]
    first, second = logged
    assert {"epoch_1"} <= set(first.aliases) and {"latest", "epoch_2"} <= set(second.aliases)
    assert "latest" not in first.aliases
    assert [a.type for a in logged] == ["model", "model"]
    assert first.metadata["step"] == 3 and second.metadata["step"] == 6
    assert first.metadata["epoch"] == 1 and second.metadata["monitor"] == "loss"
    assert isinstance(second.metadata["score"], float)
    assert second.size == (run_dir / "latest.pth").stat().st_size
    assert [f.digest for f in second.files()] == [_md5(run_dir / "latest.pth")]
    # v0's latest.pth was overwritten by the second run; epoch_1.pth still holds its bytes.
    assert first.files()[0].digest == loaded == _md5(run_dir / "epoch_1.pth")
    state = torch.load(Path(first.download(tmp_path)) / "model.pth", weights_only=True)
    assert state["epoch"] == 1
    # The runs table's column: latest, epoch_1, best and epoch_2, the newest at step 6.
    assert read_run(run_dir)[2]["checkpoints"] == {"count": 4, "step": 6}
    [used] = run.used_artifacts()
    assert used.name == f"{name}:v0" and used.digest == first.digest
    assert used.logged_by() == run_dir.name


@pytest.mark.integration
def test_the_runs_page_lists_its_checkpoints_and_the_one_it_resumed_from(
    resumed, visdom_server, reader
):
    run_dir, _loaded = resumed
    env = run_dir.name
    with following(run_dir / "pickle", visdom_server.endpoint):
        wait_until(lambda: ARTIFACTS_WIN in reader.windows(env), timeout=30)
    cells = table_cells(reader.windows(env)[ARTIFACTS_WIN]["content"])
    name = f"{env}-checkpoint"
    assert cells[0] == ["artifact", "type", "step", "metric", "size", "aliases"]
    newest = cells[1]
    assert newest[:3] == [f"{name}:v1", "model", "6"] and newest[3].startswith("loss ")
    assert "latest" in newest[5] and "epoch_2" in newest[5]
    assert [f"{name}:v0", "this run"] == cells[-1][:2]
