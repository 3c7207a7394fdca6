"""PyTorch's TensorBoard tutorial (``tensorboard_tutorial.py``) run with torch's writer and
again switched in one line: what TensorBoard reads from its own files is what our store
gives back (scalars, the image grid and figures pixel for pixel, the graph node for node,
the projector's files, each class's PR curve)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

from run_core.exit_codes import ExitCode
from run_core.tags import tag_of
from snapshot_store import read_store
from snapshot_store.format.images import decode_png
from tests.fixtures.runs.examples import run_example
from tests.fixtures.runs.tensorboard import exported_records, exported_scalars, tensorboard_scalars
from visualizer.__main__ import main

TUTORIAL = Path(__file__).with_name("tensorboard_tutorial.py")
PR_ROWS = ("tp", "fp", "tn", "fn", "precision", "recall")  # TensorBoard's tensor, row by row


def _tensorboard(logdir: Path) -> EventAccumulator:
    [events] = logdir.glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events), size_guidance={"images": 0, "tensors": 0, "scalars": 0})
    acc.Reload()
    return acc


def _export(store_root: Path, kind: str, out: Path) -> Path:
    argv = ["export", "--pickle-dir", str(store_root), "--kind", kind, "--out", str(out)]
    assert main(argv) == ExitCode.OK
    return out / "run"


@pytest.mark.integration
def test_the_tutorial_switched_in_one_line_gives_back_what_tensorboard_wrote(tmp_path):
    tb, ours = tmp_path / "tb", tmp_path / "ours" / "run"
    for module, logdir in (("torch.utils.tensorboard", tb), ("remote_train_monitor", ours)):
        run_example([sys.executable, str(TUTORIAL), module, str(logdir)], tmp_path)
    acc, (_history, reader, update) = _tensorboard(tb), read_store(ours)
    assert reader.warnings == []

    assert exported_scalars(ours) == tensorboard_scalars(tb)
    assert len(tensorboard_scalars(tb)["training loss"]) == 20

    images = {(tag_of(group, name), step): png for group, name, step, *_r, png in update.images}
    theirs = {
        (tag, event.step): event.encoded_image_string
        for tag in acc.Tags()["images"]
        for event in acc.Images(tag)
    }
    assert images.keys() == theirs.keys() and len(theirs) == 21  # the grid, 20 figures
    for key, png in theirs.items():
        expected = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        assert np.array_equal(decode_png(images[key])[..., :3], expected), key

    graph = _export(tmp_path / "ours", "graph_events", tmp_path / "graph")
    ours_graph = EventAccumulator(str(graph))
    ours_graph.Reload()
    assert [(n.name, n.op, list(n.input)) for n in ours_graph.Graph().node] == [
        (n.name, n.op, list(n.input)) for n in acc.Graph().node
    ]

    projector = _export(tmp_path / "ours", "projector", tmp_path / "projector")
    config = (tb / "projector_config.pbtxt").read_text()
    assert (projector / "projector_config.pbtxt").read_text() == config
    for name in ("tensors.tsv", "metadata.tsv"):
        assert (projector / "00000/default" / name).read_bytes() == (
            tb / "00000/default" / name
        ).read_bytes(), name
    sprites = [np.asarray(Image.open(d / "00000/default/sprite.png")) for d in (projector, tb)]
    assert np.array_equal(*sprites)

    curves = exported_records(ours, "pr_curve")
    assert set(curves) == set(acc.Tags()["tensors"]) and len(curves) == 10
    for tag, steps in curves.items():
        [event] = acc.Tensors(tag)
        table = tensor_util.make_ndarray(event.tensor_proto)
        for row, name in enumerate(PR_ROWS):
            assert steps[event.step][name] == pytest.approx(table[row].tolist(), rel=1e-6), tag
