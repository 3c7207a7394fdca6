"""``add_image_with_boxes``: an image with its boxes, drawn on the writer thread.

Plain images and figures go to the recorder's image path as pixels
(:mod:`trainer.tensorboard.image_formats`); a boxed image is a record whose
encoder draws the boxes and returns the PNG.
"""

from __future__ import annotations

from typing import Any

from snapshot_store.write import encoders
from trainer.tensorboard.image_formats import tensorboard_pixels
from trainer.tensorboard.summaries.record import Record, private_copy


def image_with_boxes(
    tag: str, img_tensor: Any, box_tensor: Any, rescale: Any, dataformats: str, labels: Any
) -> Record:
    """The image (any layout TensorBoard takes) and its boxes (x1, y1, x2, y2), drawn in red,
    labels at their corners."""
    pixels, layout = tensorboard_pixels(img_tensor, dataformats)
    raw = (pixels, private_copy(box_tensor), layout, rescale, labels)
    return Record("image", tag, raw, encoders.encode_boxes)
