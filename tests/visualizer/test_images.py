"""Image panes: sized to the whole image plus the pane's caption and slider."""

from __future__ import annotations

import struct
import zlib

from visualizer.images import image_message, png_size
from visualizer.rundata import ImageSnapshot


def png(width: int, height: int) -> bytes:
    """A real (blank, grey) PNG of ``width`` x ``height``."""
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_png_size_reads_the_header_and_refuses_other_bytes():
    assert png_size(png(30, 20)) == (30, 20)
    assert png_size(b"GIF89a" + b"\x00" * 30) is None


def test_a_small_image_is_scaled_up_and_the_pane_has_room_for_caption_and_slider():
    message = image_message("env", ImageSnapshot("images", "predictions", 7, png(28, 28)))
    opts = message["opts"]
    assert opts["title"] == "predictions" and opts["width"] == 240
    assert opts["height"] > 240  # the image's 240 plus the pane's caption and slider
    content = message["data"][0]
    assert content["type"] == "image_history"
    assert content["content"]["caption"] == "predictions @ step 7"
    assert message["win"] == "image_images_predictions"


def test_a_big_image_is_bounded_keeping_its_shape():
    opts = image_message("env", ImageSnapshot("val", "grid", 1, png(2000, 1000)))["opts"]
    assert opts["title"] == "val/grid" and opts["width"] == 640
