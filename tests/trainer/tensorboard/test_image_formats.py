"""Images in any layout TensorBoard takes, scaled as it scales them."""

from __future__ import annotations

import numpy as np
import pytest

from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from trainer import SummaryWriter


@pytest.mark.parametrize(
    "shape, dataformats, expected",
    [
        ((4, 6), "HW", (4, 6, 1)),
        ((6, 4), "WH", (4, 6, 1)),
        ((4, 6, 3), "HWC", (4, 6, 3)),
        ((3, 6, 4), "CWH", (4, 6, 3)),
    ],
)
def test_images_take_any_layout_tensorboard_takes_and_its_float_scaling(
    tmp_path, shape, dataformats, expected
):
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("img", np.full(shape, 0.5), 0, dataformats=dataformats)
    pixels = decode_png(read_store(tmp_path)[2].images[0][5])
    assert pixels.shape[:2] == expected[:2] and (pixels == 127).all()  # 0.5 * 255, truncated
