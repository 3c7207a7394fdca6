"""A run env's image windows: each logged image with its earlier snapshots, browsable by step.

Each (group, name) is a visdom ``image_history`` pane: the newest snapshot is
shown, and the pane's slider steps back through the earlier ones (each captioned
with its step). The server keeps at most twice :data:`IMAGE_HISTORY` snapshots
per pane: past that, the pane is drawn anew with the last :data:`IMAGE_HISTORY`.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from . import layout
from .rundata import IMAGE_HISTORY, ImageSnapshot, RunData, SeriesKey
from .visdom_client import VisdomClient

# Room in a pane besides the image: visdom's title bar, the caption and the step slider.
_CHROME_PX = 100
# Small images (MNIST's 28 px) get a readable pane, big ones a bounded one.
_MIN_SIDE_PX, _MAX_SIDE_PX = 240, 640


def png_size(png: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, without decoding the image."""
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        return struct.unpack(">II", png[16:24])
    return None


def image_message(env: str, image: ImageSnapshot) -> dict[str, Any]:
    """visdom's message drawing (``events``) or adding to (``update``) ``image``'s pane."""
    group, name = image.group, image.name
    opts: dict[str, Any] = {"title": f"{group}/{name}" if group != "images" else name}
    size = png_size(image.png)
    if size:
        scale = min(max(1.0, _MIN_SIDE_PX / max(min(size), 1)), _MAX_SIDE_PX / max(max(size), 1))
        # The pane is sized so the whole grid shows, with the slider under it.
        opts["width"] = int(size[0] * scale)
        opts["height"] = int(size[1] * scale) + _CHROME_PX
    src = "data:image/png;base64," + base64.b64encode(image.png).decode("ascii")
    return {
        "data": [
            {
                "content": {"src": src, "caption": f"{name} @ step {image.step}"},
                "type": "image_history",
            }
        ],
        "win": layout.image_window(group, name),
        "eid": env,
        "opts": opts,
    }


class ImagePanes:
    """Which image snapshots of a run the server shows, and sending the missing ones."""

    def __init__(self, client: VisdomClient, env: str) -> None:
        self.client = client
        self.env = env
        self.sent: dict[SeriesKey, int] = {}  # snapshots logged so far that the server has
        self.in_pane: dict[SeriesKey, int] = {}  # snapshots the server's pane holds

    def invalidate(self) -> None:
        """Forget what the server shows: the next sync draws every pane anew."""
        self.sent.clear()
        self.in_pane.clear()

    def forget(self, win: str) -> None:
        """Window ``win`` was closed."""
        for key in [k for k in self.sent if layout.image_window(*k) == win]:
            del self.sent[key]
            self.in_pane.pop(key, None)

    @staticmethod
    def windows(run: RunData) -> list[str]:
        """The image windows of ``run``, in display order."""
        return [layout.image_window(*key) for key in sorted(run.image_history)]

    def sync(self, run: RunData) -> bool:
        """Send the snapshots the server lacks; True if anything was sent."""
        sent = False
        for key in sorted(run.image_history):
            history, logged = run.image_history[key], run.images_logged[key]
            fresh = min(logged - self.sent.get(key, 0), len(history))
            if fresh <= 0:
                continue
            redraw = key not in self.in_pane or self.in_pane[key] + fresh > 2 * IMAGE_HISTORY
            snapshots = list(history) if redraw else list(history)[-fresh:]
            if redraw:
                self.in_pane[key] = 0
            for i, image in enumerate(snapshots):
                route = "events" if redraw and i == 0 else "update"
                self.client.post(route, image_message(self.env, image))
            self.in_pane[key] += len(snapshots)
            self.sent[key] = logged
            run.changed_images.discard(key)
            sent = True
        return sent
