"""``Api().runs()`` and ``Api().run()`` over a directory of runs: filters and bad input."""

from __future__ import annotations

import gc

import pytest

from visualizer.api import Api
from workloads.many_runs import run_spec, write_runs


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    write_runs(root, 40, points=20, workers=1)
    return root


def test_every_run_is_listed_with_its_config_and_summary(sweep):
    runs = Api().runs(str(sweep))
    assert [run.name for run in runs] == [f"run-{i:05d}" for i in range(40)]
    for index, run in enumerate(runs):
        spec = run_spec(index, points=20)
        assert run.config == spec.options
        assert run.state == spec.state
        assert set(run.summary) >= {"train/loss", "train/accuracy", "val/loss", "_step"}
        assert run.summary["_step"] == spec.steps - 1
    assert gc.isenabled()  # paused while listing (see read_runs), back on after


def test_listing_leaves_the_cycle_collector_off_where_the_caller_turned_it_off(sweep):
    gc.disable()
    try:
        Api().runs(str(sweep))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_filters_keep_the_runs_they_name(sweep):
    specs = [run_spec(i, points=20) for i in range(40)]
    kept = Api().runs(str(sweep), {"config.lr": 0.01, "state": "finished"})
    assert [r.name for r in kept] == [
        s.name for s in specs if s.options["lr"] == 0.01 and s.state == "finished"
    ]
    assert [r.name for r in Api().runs(str(sweep), {"name": {"$regex": "^run-0000[1-3]$"}})] == [
        "run-00001", "run-00002", "run-00003",
    ]  # fmt: skip


def test_one_run_by_its_run_directory(sweep):
    assert Api().run(str(sweep / "run-00007")).name == "run-00007"


def test_a_directory_of_runs_is_not_one_run(sweep):
    with pytest.raises(ValueError, match=r"holds 40 runs \(run-00000, run-00001, run-00002, "):
        Api().run(str(sweep))


def test_a_path_with_no_runs_says_so_in_one_line(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        Api().runs(str(tmp_path))
    assert "no snapshot store found" in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_filter_is_refused_before_anything_is_read(tmp_path):
    with pytest.raises(ValueError, match="filter 'tags'"):
        Api().runs(str(tmp_path / "nothing-here"), {"tags": "x"})


def test_api_reads_runs_where_torch_can_not_be_imported(sweep):
    import subprocess
    import sys

    from tests.fixtures.runs.checkout import ROOT
    from tests.visualizer.test_cli import BLOCK_TORCH

    code = BLOCK_TORCH + (
        "from remote_train_monitor import Api\n"
        f"run = Api().runs({str(sweep)!r})[3]\n"
        "assert len(run.history()) == 20 and 'torch' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
