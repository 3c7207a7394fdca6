"""A run env's image windows: each logged image with its earlier snapshots, browsable by step.

Each (group, name) is a visdom ``image_history`` pane: the newest snapshot is
shown, and the pane's slider steps back through the earlier ones (each captioned
with its step). The server keeps the last :data:`IMAGE_HISTORY` snapshots per pane.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from run_core.tags import tag_of
from visualizer import layout
from visualizer.model.rundata import IMAGE_HISTORY, ImageSnapshot, RunData, SeriesKey
from visualizer.visdom_client import VisdomClient

# Room in a pane besides the image: visdom's title bar, the caption and the step slider.
_CHROME_PX = 100
# visdom's reply to an update of a window it does not have (closed on a page, or lost).
_NO_WINDOW = "win does not exist"
# An image pane is as wide as a plot pane, so it lines up with the plot column; the image
# is scaled to fill that width, its height bounded (a tall image is narrower, centred).
_MAX_IMAGE_HEIGHT_PX = 480


def png_size(png: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, without decoding the image."""
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        return struct.unpack(">II", png[16:24])
    return None


def image_message(env: str, *images: ImageSnapshot) -> dict[str, Any]:
    """visdom's message drawing (``events``) or adding to (``update``) the pane of ``images``.

    They are snapshots of one (group, name), the newest last. Drawn with several,
    our visdom's pane holds them all (stock visdom keeps the first); ``history``
    tells our visdom how many an appended pane keeps.
    """
    newest = images[-1]
    group, name = newest.group, newest.name
    opts: dict[str, Any] = {
        "title": name if group == "images" else tag_of(group, name),
        "history": IMAGE_HISTORY,
    }
    size = png_size(newest.png)
    opts["width"] = layout.PLOT_SIZE[0]
    if size:
        width = layout.PLOT_SIZE[0]
        scale = min(width / max(size[0], 1), _MAX_IMAGE_HEIGHT_PX / max(size[1], 1))
        # The pane is sized so the whole grid shows, with the slider under it.
        opts["height"] = int(size[1] * scale) + _CHROME_PX
    return {
        "data": [{"content": _content(image), "type": "image_history"} for image in images],
        "win": layout.image_window(group, name),
        "eid": env,
        "opts": opts,
    }


def _content(image: ImageSnapshot) -> dict[str, str]:
    """The pane's image and its caption: the step, then the logged captions (React text on
    the page, so a caption's markup shows as the characters it is)."""
    src = "data:image/png;base64," + base64.b64encode(image.png).decode("ascii")
    caption = f"{image.name} @ step {image.step}"
    if any(image.captions):
        caption += ": " + " | ".join(image.captions)
    return {"src": src, "caption": caption}


class ImagePanes:
    """Which image snapshots of a run the server shows, and sending the missing ones."""

    def __init__(self, client: VisdomClient, env: str) -> None:
        self.client = client
        self.env = env
        self.sent: dict[SeriesKey, int] = {}  # snapshots logged so far that the server has

    def invalidate(self) -> None:
        """Forget what the server shows: the next draw draws every pane anew."""
        self.sent.clear()

    def forget(self, win: str) -> None:
        """Window ``win`` was closed."""
        for key in [k for k in self.sent if layout.image_window(*k) == win]:
            del self.sent[key]

    @staticmethod
    def windows(run: RunData) -> list[str]:
        """The image windows of ``run``, in display order."""
        return [layout.image_window(*key) for key in sorted(run.image_history)]

    def draw(self, run: RunData) -> bool:
        """Send the snapshots the server lacks; True if anything was sent.

        A pane is drawn once, with every snapshot of its history in one message,
        then only appended to (our visdom drops the oldest past
        :data:`IMAGE_HISTORY`, see :mod:`visualizer.server.child`). Its history
        never shrinks under a page left open, whose pane keeps the slider's
        position: a position past a shorter history blanked the whole page.
        A pane the server lost is drawn anew; the page puts it last, so every
        pane after it is drawn anew too, keeping the run's order.
        """
        redraw = False
        sent = False
        for key in sorted(run.image_history):
            history, logged = list(run.image_history[key]), run.images_logged[key]
            fresh = min(logged - self.sent.get(key, 0), len(history))
            redraw = redraw or key not in self.sent
            if not redraw and fresh <= 0:
                continue
            if not redraw and not self._append(history[-fresh:]):
                redraw = True  # closed on a page, or lost
            if redraw:
                self.client.post("events", image_message(self.env, *history))
            self.sent[key] = logged
            run.changed_images.discard(key)
            sent = True
        return sent

    def _append(self, snapshots: list[ImageSnapshot]) -> bool:
        """Add ``snapshots`` to their pane; False when the server has no such pane."""
        return all(
            self.client.post("update", image_message(self.env, image)) != _NO_WINDOW
            for image in snapshots
        )
