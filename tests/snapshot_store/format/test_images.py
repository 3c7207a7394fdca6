"""decode_png: PNG bytes in, pixels out; anything else (or a decompression bomb) a ValueError."""

from __future__ import annotations

import numpy as np
import pytest

from snapshot_store.format.images import MAX_PNG_PIXELS, decode_png, encode_png
from tests.fixtures.logged.images import png, png_claiming


def test_a_png_decodes_to_its_pixels():
    pixels = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert decode_png(encode_png(pixels)).tolist() == pixels.tolist()
    assert decode_png(png(4, 2)).shape == (2, 4, 3)


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"GIF89a" + bytes(40), "not a readable PNG image"),
        (b"", "not a readable PNG image"),
        (png(8, 8)[:40], "not a readable PNG image"),  # truncated in its pixels
        (png_claiming(10**5, 10**5), "not a readable PNG image"),  # Pillow's bomb error
        (png_claiming(MAX_PNG_PIXELS // 1000 + 1, 1000), "more than"),  # Pillow only warns
    ],
    ids=["gif", "empty", "truncated", "bomb", "past-the-bound"],
)
def test_other_bytes_are_a_value_error_naming_the_problem(data, problem):
    with pytest.raises(ValueError, match=problem):
        decode_png(data)
