"""W&B's "Import and export data" read snippets, run unchanged (the import switched) through
``remote_train_monitor.wandb.Api`` on runs our W&B-style module wrote, compared with what
W&B 0.31's offline files of the same script hold: the runs in W&B's order under their shown
names, ``run.summary._json_dict``, ``run.config``'s items, ``history()``'s columns and dtypes.
"""

from __future__ import annotations

import inspect
import math
import textwrap
from pathlib import Path

import pytest

from tests.fixtures.runs.wandb_files import read_wandb_file, run_under_both, wandb_history_rows
from tests.fixtures.servers.parts import need_module

SCRIPT = Path(__file__).with_name("wandb_export.py")

# W&B's documented snippet (docs.wandb.ai, "Import and export data": querying multiple runs),
# its placeholders filled in and its import switched.
SNIPPET = textwrap.dedent("""
    import pandas as pd
    import remote_train_monitor.wandb as wandb

    api = wandb.Api()
    entity, project = "someone", "export"
    runs = api.runs(entity + "/" + project)

    summary_list, config_list, name_list = [], [], []
    for run in runs:
        # .summary contains output keys/values for metrics such as accuracy.
        #  We call ._json_dict to omit large files
        summary_list.append(run.summary._json_dict)

        # .config contains the hyperparameters.
        #  We remove special values that start with _.
        config_list.append({k: v for k, v in run.config.items() if not k.startswith("_")})

        # .name is the human-readable name of the run.
        name_list.append(run.name)

    runs_df = pd.DataFrame(
        {"summary": summary_list, "config": config_list, "name": name_list}
    )
""")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The script under W&B and under ours: W&B's runs in creation order, our WANDB_DIR."""
    ref, ours = run_under_both(SCRIPT, tmp_path_factory.mktemp("export"))
    runs = [(read_wandb_file(p), wandb_history_rows(p)) for p in ref.glob("wandb/offline-*/run-*")]
    return sorted(runs, key=lambda run: run[1][0]["_timestamp"]), ours  # in creation order


@pytest.mark.integration
def test_the_runs_dataframe_snippet_gives_wandbs_dataframe(both, monkeypatch):
    pd = pytest.importorskip("pandas")
    theirs, ours = both
    monkeypatch.setenv("WANDB_DIR", str(ours))
    scope: dict = {}
    exec(SNIPPET, scope)  # the documented snippet, as a user runs it
    runs_df = scope["runs_df"]
    names = [ref["name"] for ref, _rows in theirs]
    assert names == ["zeta", "alpha-renamed"]  # created first, listed first; the new name
    expected = pd.DataFrame({
        "summary": [_final_summary(rows, ref) for ref, rows in theirs],
        "config": [ref["config"] for ref, _rows in theirs],
        "name": names,
    })  # fmt: skip
    assert list(runs_df.columns) == list(expected.columns)
    assert list(runs_df.dtypes) == list(expected.dtypes)
    assert list(runs_df["name"]) == names and list(runs_df["config"]) == list(expected["config"])
    for mine, ref in zip(runs_df["summary"], expected["summary"], strict=True):
        assert {k: v for k, v in mine.items() if not k.startswith("_")} == ref["logged"]
        assert type(mine["count"]) is int and mine["count"] == 525  # 525, not 525.0
        assert {"_step", "_runtime", "_timestamp"} <= set(mine) and mine["_step"] == ref["_step"]


def _final_summary(rows: list[dict], ref: dict) -> dict:
    return {"logged": ref["logged"], "_step": rows[-1]["_step"]}


@pytest.mark.integration
def test_history_has_wandbs_columns_and_dtypes_and_runs_are_in_wandbs_order(both, monkeypatch):
    pd = pytest.importorskip("pandas")
    need_module("wandb")
    import wandb as real_wandb

    import remote_train_monitor.wandb as wandb

    theirs, ours = both
    default = inspect.signature(real_wandb.Api.runs).parameters["order"].default
    assert default == "+created_at"  # W&B 0.31: oldest first
    monkeypatch.setenv("WANDB_DIR", str(ours))
    api = wandb.Api()
    runs = api.runs("someone/export")
    assert [run.name for run in runs] == ["zeta", "alpha-renamed"]
    assert [run.id for run in runs] == ["zeta", "alpha"]  # the folder stays the id
    newest_first = api.runs("export", order="-created_at")
    assert [run.name for run in newest_first] == ["alpha-renamed", "zeta"]
    assert runs[0].created_at <= runs[1].created_at and runs[0].created_at.endswith("Z")
    for run, (_ref, rows) in zip(runs, theirs, strict=True):
        assert api.run(f"someone/export/{run.id}").name == run.name
        mine, reference = run.history(), pd.DataFrame.from_records(rows)
        assert sorted(mine.columns) == sorted(reference.columns)
        assert {c: str(t) for c, t in mine.dtypes.items()} == {
            c: str(t) for c, t in reference.dtypes.items()
        }
        assert list(mine["count"]) == [523, 524, 525] and list(mine["_step"]) == [0, 1, 2]
        asked = run.history(keys=["_step", "count"])  # a row's own columns may be asked for
        assert list(asked["count"]) == [523, 524, 525] and "loss" not in asked
        runtimes = list(mine["_runtime"])
        assert all(0 <= r < 60 for r in runtimes) and runtimes == sorted(runtimes)
        scanned = list(run.scan_history())
        assert [row["count"] for row in scanned] == [523, 524, 525]
        assert type(scanned[0]["whole"]) is int and not math.isnan(scanned[0]["_runtime"])
