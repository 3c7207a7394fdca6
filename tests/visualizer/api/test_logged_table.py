"""A logged W&B Table read back: its cells as stored, image cells as images, and bytes that
are no image (a hostile store's) kept as bytes without costing the rest of the table."""

from __future__ import annotations

import numpy as np

from snapshot_store import Recorder
from snapshot_store.format.images import encode_png
from visualizer.api import Api


def test_a_tables_cells_come_back_and_a_cell_that_is_no_image_stays_bytes(tmp_path):
    store = tmp_path / "run" / "pickle"
    png = encode_png(np.full((3, 5, 3), 7, np.uint8))
    record = {
        "columns": ["image", "label", "scores"],
        "rows": [[png, "cat", [0.5, 0.25]], [b"<svg onload=alert(1)>", "dog", None]],
    }
    with Recorder(store, rank=0) as rec:
        rec.log_record("table", "predictions", record, 4)
    (logged,) = Api().run(str(store)).tables()["predictions"]
    assert (logged.step, logged.columns) == (4, ["image", "label", "scores"])
    image, hostile = logged.data[0][0], logged.data[1][0]
    assert image.size == (5, 3)
    assert hostile == b"<svg onload=alert(1)>"
    assert [row[1:] for row in logged.data] == [["cat", [0.5, 0.25]], ["dog", None]]
    frame = logged.get_dataframe()
    assert list(frame.columns) == ["image", "label", "scores"] and list(frame["label"]) == [
        "cat",
        "dog",
    ]
