"""A run's latest images in the snapshot: each (group, name)'s newest PNG, as the run's page
shows it first, within a byte budget so that a run of large images does not swell the file.

Only PNGs go in (checked by their signature and header), as ``data:image/png`` URLs that
the page's Content-Security-Policy allows; the page shows them as thumbnails.
"""

from __future__ import annotations

import base64
from typing import Any

from run_core.tags import tag_of
from visualizer.model.rundata import RunData
from visualizer.panes.images import png_size

IMAGE_BYTES = 512 * 1024  # one image's PNG at most
RUN_IMAGE_BYTES = 4 * 1024 * 1024  # one run's images at most


def image_content(run: RunData) -> tuple[list[dict[str, Any]], int]:
    """The run's newest image of each tag, in tag order, and how many were left out (not a
    PNG, or past :data:`IMAGE_BYTES` or :data:`RUN_IMAGE_BYTES`)."""
    shown: list[dict[str, Any]] = []
    total = left_out = 0
    for key in sorted(run.images):
        snapshot = run.images[key]
        size = png_size(snapshot.png)
        if (
            size is None
            or len(snapshot.png) > IMAGE_BYTES
            or total + len(snapshot.png) > RUN_IMAGE_BYTES
        ):
            left_out += 1
            continue
        total += len(snapshot.png)
        group, name = key
        shown.append(
            {
                "title": name if group == "images" else tag_of(group, name),
                "step": snapshot.step,
                "width": size[0],
                "height": size[1],
                "png": base64.b64encode(snapshot.png).decode("ascii"),
                "captions": list(snapshot.captions),
            }
        )
    return shown, left_out
