"""``wandb.watch``: the gradient and parameter histograms W&B stores, compared with W&B.

W&B adds each hook's histogram to the open step's history row, so a tag that fires
several times in one step keeps the last; a row still open at ``finish`` is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.runs.wandb_files import one_run_under_both, stored_run

HERE = Path(__file__).parent


def _assert_wandbs_histograms(ref: dict[str, Any], ours: dict[str, Any]) -> set[str]:
    """Every watched tag has a histogram at W&B's steps, one each, with W&B's counts and
    edges; returns the tags."""
    watched = {k for k in ref["history"] if k.startswith(("gradients/", "parameters/"))}
    events = [(tag, step, data) for kind, tag, step, data in ours["extras"] if kind == "histogram"]
    assert {tag for tag, _step, _data in events} == watched
    for key in watched:
        steps = sorted(ref["history"][key])
        assert sorted(step for tag, step, _data in events if tag == key) == steps, key
        for step in steps:
            theirs = ref["history"][key][step]
            [mine] = [data for tag, s, data in events if (tag, s) == (key, step)]
            # W&B: 64 counts between 65 edges; ours TensorBoard's: each count with its right
            # edge (a first empty bucket holds the left edge). The non-empty buckets agree.
            ours_ = [(edge, n) for edge, n in zip(mine["limits"], mine["counts"], strict=True) if n]
            wandbs = [
                (e, n) for e, n in zip(theirs["bins"][1:], theirs["values"], strict=True) if n
            ]
            assert [n for _e, n in ours_] == [n for _e, n in wandbs], (key, step)
            # W&B computes edges in float32: an edge near zero is off by float32's step
            # at the histogram's widest edge, not by a share of its own size.
            edges = [e for e, _n in wandbs]
            near = 1e-6 * max(abs(e) for e in edges)
            assert [e for e, _n in ours_] == pytest.approx(edges, rel=1e-5, abs=near)
    return watched


@pytest.mark.integration
def test_watch_stores_wandbs_gradient_and_parameter_histograms(tmp_path):
    args = ("--epochs", "2", "--watch-log", "all", "--watch-log-freq", "3")
    ref, ours = one_run_under_both(HERE / "wandb_mnist.py", tmp_path, *args)
    watched = _assert_wandbs_histograms(ref, ours)
    assert "gradients/conv1.weight" in watched and "parameters/fc.bias" in watched


@pytest.mark.integration
def test_hooks_firing_several_times_in_a_step_keep_the_last_histogram_as_wandb(tmp_path):
    ref, ours = one_run_under_both(HERE / "wandb_watch_tiny.py", tmp_path)
    watched = _assert_wandbs_histograms(ref, ours)
    assert len(watched) == 8  # 4 tensors' gradients and values
    # Steps 0 and 1 took 2 and 3 hook calls each; step 2, left open, is stored at finish.
    assert {step for key in watched for step in ref["history"][key]} == {0, 1, 2}


def test_a_jump_to_a_later_step_stores_the_open_steps_histograms_at_it(wandb, tmp_path):
    import torch

    run = wandb.init(project="p", name="n")
    model = torch.nn.Linear(2, 1)
    run.watch(model, log="parameters", log_freq=1, idx=0)
    model(torch.ones(1, 2))
    with torch.no_grad():
        model.bias.fill_(7.0)
    model(torch.ones(1, 2))  # step 0 again: this call's values replace the first's
    run.log({"a": 1.0}, step=5)
    model(torch.ones(1, 2))
    run.finish()
    ours = stored_run(tmp_path / "wandb" / "p" / "n" / "pickle")
    events = [(tag, step, data) for kind, tag, step, data in ours["extras"] if kind == "histogram"]
    assert sorted((tag, step) for tag, step, _data in events) == [
        ("parameters/bias", 0), ("parameters/bias", 5),
        ("parameters/weight", 0), ("parameters/weight", 5),
    ]  # fmt: skip
    assert [data["max"] for tag, _step, data in events if tag == "parameters/bias"] == [7.0, 7.0]
