"""Image panes: sized to the whole image plus the pane's caption and slider."""

from __future__ import annotations

from snapshot_store.read.store_reader import Update
from tests.fixtures.logged.images import png
from visualizer.layout import PLOT_SIZE
from visualizer.model.rundata import IMAGE_HISTORY, ImageSnapshot, RunData
from visualizer.panes.images import ImagePanes, image_message, png_size


def test_png_size_reads_the_header_and_refuses_other_bytes():
    assert png_size(png(30, 20)) == (30, 20)
    assert png_size(b"GIF89a" + b"\x00" * 30) is None


def test_a_small_image_is_scaled_up_and_the_pane_has_room_for_caption_and_slider():
    message = image_message("env", ImageSnapshot("images", "predictions", 7, png(28, 28)))
    opts = message["opts"]
    assert opts["title"] == "predictions" and opts["width"] == PLOT_SIZE[0]
    assert opts["height"] > 480  # the image's 480 (bounded) plus the pane's caption and slider
    content = message["data"][0]
    assert content["type"] == "image_history"
    assert content["content"]["caption"] == "predictions @ step 7"
    assert message["win"] == "image_images_predictions"


def test_an_images_captions_follow_its_step_as_given():
    captions = ["a cat <img src=x onerror=alert(1)>", "", "dog"]
    run = RunData("r")
    run.apply(Update(images=[("images", "batch", 3, 0.0, 0.0, png(8, 8), captions)]))
    content = image_message("env", run.images[("images", "batch")])["data"][0]["content"]
    # React text on the page: the markup is kept as characters, never made elements.
    assert content["caption"] == "batch @ step 3: a cat <img src=x onerror=alert(1)> |  | dog"


def test_every_image_pane_is_as_wide_as_the_plot_column_keeping_the_image_shape():
    wide = image_message("env", ImageSnapshot("val", "grid", 1, png(2000, 1000)))["opts"]
    assert wide["title"] == "val/grid" and wide["width"] == PLOT_SIZE[0]
    grid = image_message("env", ImageSnapshot("images", "p", 1, png(274, 138)))["opts"]
    assert grid["width"] == PLOT_SIZE[0]
    assert grid["height"] - wide["height"] == int(138 * PLOT_SIZE[0] / 274) - PLOT_SIZE[0] // 2


class PostLog:
    """Stands in for the visdom client: records (route, window, snapshots) and answers as
    visdom does to an update of a window it does not have."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, int]] = []
        self.missing: set[str] = set()  # windows the server has lost (closed on a page)

    def post(self, route: str, msg: dict) -> str:
        self.posts.append((route, msg["win"], len(msg["data"])))
        if route == "update" and msg["win"] in self.missing:
            return "win does not exist"
        if route == "events":
            self.missing.discard(msg["win"])
        return msg["win"]


def log_images(run: RunData, name: str, steps: range) -> None:
    run.apply(Update(images=[("images", name, s, 0, 0.0, png(4, 4)) for s in steps]))


def test_a_pane_is_drawn_once_with_its_history_then_only_appended_to():
    # Drawing a pane again in place under an open page (a shorter history than the
    # page's slider position) blanked the whole page: a pane's history never shrinks.
    client, run = PostLog(), RunData("r")
    panes = ImagePanes(client, "env")  # type: ignore[arg-type]
    log_images(run, "pred", range(2 * IMAGE_HISTORY))
    panes.draw(run)
    assert client.posts == [("events", "image_images_pred", IMAGE_HISTORY)]
    for start in range(2 * IMAGE_HISTORY, 5 * IMAGE_HISTORY, 7):
        log_images(run, "pred", range(start, start + 7))
        panes.draw(run)
    assert {route for route, _, _ in client.posts[1:]} == {"update"}
    assert len(client.posts) == 1 + 3 * IMAGE_HISTORY + 1


def test_every_message_tells_the_server_how_many_snapshots_a_pane_keeps():
    snapshots = [ImageSnapshot("images", "p", step, png(4 + 4 * step // 2, 4)) for step in range(3)]
    message = image_message("env", *snapshots)
    assert message["opts"]["history"] == IMAGE_HISTORY
    assert [d["content"]["caption"] for d in message["data"]] == [f"p @ step {i}" for i in range(3)]
    assert message["opts"]["height"] == 300 + 100  # sized by the newest, 8 x 4


def test_a_pane_the_server_lost_is_drawn_again_with_the_panes_after_it():
    client, run = PostLog(), RunData("r")
    panes = ImagePanes(client, "env")  # type: ignore[arg-type]
    log_images(run, "a", range(3))
    log_images(run, "b", range(3))
    panes.draw(run)
    client.missing.add("image_images_a")  # closed on a page
    client.posts.clear()
    log_images(run, "a", range(3, 4))
    log_images(run, "b", range(3, 4))
    panes.draw(run)
    assert client.posts == [
        ("update", "image_images_a", 1),
        ("events", "image_images_a", 4),
        ("events", "image_images_b", 4),  # the page puts a redrawn pane last: keep the order
    ]
