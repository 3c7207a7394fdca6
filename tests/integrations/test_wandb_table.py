"""``wandb.Table`` stored as a table (W&B's "Track experiments" tutorial's table of images
and predictions), compared with the table file W&B 0.31 writes offline: its columns and
typed cells, images kept as images (W&B's offline file has only the word "Image" there);
read back by the Api as a DataFrame, drawn on the run's page with thumbnails.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from tests.fixtures.runs.wandb_files import run_under_both

SCRIPT = Path(__file__).with_name("wandb_table.py")


@pytest.fixture(scope="module")
def table_run(tmp_path_factory):
    """The script under W&B and under ours: W&B's table file (columns, data), our store."""
    ref, ours = run_under_both(SCRIPT, tmp_path_factory.mktemp("table"))
    [file] = ref.glob("wandb/offline-run-*/files/media/table/predictions_table_*.table.json")
    return json.loads(file.read_text()), ours / "wandb" / "p" / "n" / "pickle"


@pytest.mark.integration
def test_a_table_is_stored_with_wandbs_columns_and_cells_and_its_images(table_run):
    theirs, store = table_run
    _history, reader, update = read_store(store)
    assert reader.warnings == []
    [(step, record)] = [(s, d) for kind, tag, s, _w, d in update.extras if kind == "table"]
    assert step == 0 and record["columns"] == theirs["columns"]
    assert len(record["rows"]) == len(theirs["data"]) == 4
    for mine, ref in zip(record["rows"], theirs["data"], strict=True):
        assert ref[0] == "Image" and decode_png(mine[0]).shape == (28, 28, 3)
        assert mine[1:] == ref[1:]  # predictions and targets ints, scores floats, text
        assert [type(v) for v in mine[1:3]] == [int, int]


@pytest.mark.integration
def test_the_api_gives_the_table_back_as_a_dataframe(table_run):
    pd = pytest.importorskip("pandas")
    from remote_train_monitor import Api

    theirs, store = table_run
    [table] = Api().run(str(store.parent)).tables()["predictions_table"]
    frame = table.get_dataframe()
    reference = pd.DataFrame.from_records(theirs["data"], columns=theirs["columns"])
    assert list(frame.columns) == list(reference.columns)
    mine, ref = frame.drop(columns="image"), reference.drop(columns="image")
    assert dict(mine.dtypes.astype(str)) == dict(ref.dtypes.astype(str)) and mine.equals(ref)
    assert str(frame["image"].dtype) == "object"  # images, where W&B's file has the word
    assert np.asarray(frame["image"][0]).shape == (28, 28) and table.step == 0


def test_a_table_past_wandbs_row_limit_is_cut_with_its_warning(wandb, tmp_path, caplog):
    run = wandb.init(project="p", name="n")
    run.log({"big": wandb.Table(columns=["i"], data=[[i] for i in range(10_001)])})
    run.finish()
    assert "Truncating wandb.Table object to 10000 rows." in caplog.text
    [record] = [
        d for k, *_r, d in read_store(tmp_path / "wandb/p/n/pickle")[2].extras if k == "table"
    ]
    assert len(record["rows"]) == 10_000 and record["rows"][-1] == [9_999]
