"""A snapshot's images: each tag's newest PNG, within the file's byte budget."""

from __future__ import annotations

import base64

import numpy as np

from snapshot_store import Recorder
from visualizer.model.rundata import ImageSnapshot, RunData
from visualizer.snapshot import images
from visualizer.snapshot.content import read_run
from visualizer.snapshot.images import image_content


def test_the_newest_png_of_each_tag_with_its_captions(tmp_path):
    store = tmp_path / "r" / "pickle"
    with Recorder(store, name="r") as rec:
        for step in range(3):
            picture = np.full((4, 6, 3), step * 40, np.uint8)
            rec.log_image("sample", picture, step, dataformats="HWC", captions=["<b>a</b>"])
        rec.log_image("grid", np.zeros((2, 2, 3), np.uint8), 1, group="gen", dataformats="HWC")
    shown, left_out = image_content(read_run("r", store))
    assert left_out == 0
    assert [(i["title"], i["step"], i["width"], i["height"]) for i in shown] == [
        ("gen/grid", 1, 2, 2),
        ("sample", 2, 6, 4),
    ]
    assert shown[1]["captions"] == ["<b>a</b>"]
    assert base64.b64decode(shown[1]["png"]).startswith(b"\x89PNG")


def test_what_is_not_a_png_or_over_the_cap_is_left_out_and_counted(monkeypatch):
    run = RunData("r")
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01" + b"\x00" * 100
    run.images = {
        ("images", "a"): ImageSnapshot("images", "a", 0, png),
        ("images", "b"): ImageSnapshot("images", "b", 0, b"<svg onload=alert(1)>"),
        ("images", "c"): ImageSnapshot("images", "c", 0, png + b"\x00" * 100),
        ("images", "d"): ImageSnapshot("images", "d", 0, png),
    }
    monkeypatch.setattr(images, "IMAGE_BYTES", 150)
    monkeypatch.setattr(images, "RUN_IMAGE_BYTES", 300)
    shown, left_out = image_content(run)
    assert [i["title"] for i in shown] == ["a", "d"] and left_out == 2
    monkeypatch.setattr(images, "RUN_IMAGE_BYTES", 200)
    shown, left_out = image_content(run)
    assert [i["title"] for i in shown] == ["a"] and left_out == 3
