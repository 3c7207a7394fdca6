"""The run page's artifacts pane and the runs table's checkpoints column: versions, aliases,
the run a used artifact came from, and a store's text never taken as markup."""

from __future__ import annotations

from snapshot_store.format.summary import RunSummary
from tests.visualizer.panes.test_extra_windows import table_cells
from visualizer.panes.artifacts import artifacts_pane
from visualizer.panes.run_rows import (
    CHECKPOINTS,
    TableView,
    checkpoints_of,
    select,
    summary_cells,
    summary_columns,
)


def _logged(name: str, digest: str, aliases: list[str], step: int, score: float) -> tuple:
    entry = {"path": "model.pth", "digest": "x", "size": 2_000_000, "stored": f"{aliases[0]}.pth"}
    data = {
        "name": name,
        "type": "model",
        "description": "",
        "metadata": {"step": step, "monitor": "loss", "score": score},
        "aliases": aliases,
        "digest": digest,
        "files": [entry],
    }
    return ("artifact", name, step, float(step), data)


def _used(name: str, digest: str, run: str) -> tuple:
    data = {"name": name, "version": "", "digest": digest, "run": run, "stored": []}
    return ("artifact_use", name, 9, 9.0, data)


def test_the_pane_lists_each_version_newest_first_and_what_the_run_used():
    records = [
        _logged("r-checkpoint", "d0", ["latest"], 3, 0.5),
        _logged("r-checkpoint", "d0", ["best"], 3, 0.5),  # the same bytes: the same version
        _logged("r-checkpoint", "d1", ["latest"], 6, 0.25),
        _used("r-checkpoint", "d0", "r"),
        _used("other-checkpoint", "e", "other"),
    ]
    pane = str(artifacts_pane(records, "r", link=lambda run: f"/env/{run}"))
    cells = table_cells(pane)
    assert cells[1] == ["r-checkpoint:v1", "model", "6", "loss 0.25", "2.0 MB", "latest"]
    assert cells[2] == ["r-checkpoint:v0", "model", "3", "loss 0.5", "2.0 MB", "best"]
    assert cells[3] == ["used artifact", "logged by", "digest"]
    assert ["r-checkpoint:v0", "this run", "d0"] in cells
    assert '<a href="/env/other"' in pane or "<a href='/env/other'" in pane


def test_a_stores_text_is_escaped_in_the_pane():
    records = [_logged("<b>x</b>", "d", ["<i>"], 1, 1.0), _used("<s>", "e", "<u>")]
    pane = str(artifacts_pane(records, "r", link=lambda run: f"/env/{run}"))
    for tag in ("<b>", "<i>", "<s>", "<u>"):
        assert tag not in pane
    assert "&lt;b&gt;x&lt;/b&gt;:v0" in pane


def test_the_runs_table_has_a_checkpoints_column_for_runs_that_saved_some():
    saved = RunSummary("a", status={CHECKPOINTS: {"count": 4, "step": 1200}})
    hostile = [
        RunSummary("b", status={CHECKPOINTS: {"count": "4", "step": 1}}),
        RunSummary("c", status={CHECKPOINTS: "<b>"}),
        RunSummary("d", status={CHECKPOINTS: {"count": True, "step": 1}}),
    ]
    assert checkpoints_of(saved) == (4, 1200)
    assert [checkpoints_of(s) for s in hostile] == [None, None, None]
    assert summary_cells(saved)[CHECKPOINTS] == "4 (step 1,200)"
    assert summary_columns([saved, *hostile]) == [CHECKPOINTS]
    order = select([*hostile, saved], TableView(sort=CHECKPOINTS), None, 0.0)
    assert order[0] is saved
