"""``python -m visualizer export --kind graph_events --out DIR``: each run's traced model
graph as the event file TensorBoard's Graphs tab reads (``tensorboard --logdir DIR``).

What ``torch.utils.tensorboard``'s ``add_graph`` writes: an event holding the GraphDef,
then one holding the RunMetadata tagged ``step1``. tensorboard's own event writer
writes the file, imported only here; without it the export says what to install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snapshot_store.read.store_reader import read_store

from .projector import run_folder
from .runs import RunSpec


def _event_writer(folder: Path) -> tuple[Any, Any]:
    """tensorboard's EventFileWriter for ``folder`` and its ``event_pb2``; ImportError naming
    the package when tensorboard is not installed."""
    try:
        from tensorboard.compat.proto import event_pb2  # type: ignore[import-untyped]
        from tensorboard.summary.writer.event_file_writer import (  # type: ignore[import-untyped]
            EventFileWriter,
        )
    except ImportError as err:
        raise ImportError(
            f"--kind graph_events writes TensorBoard's event files: pip install tensorboard ({err})"
        ) from err
    return EventFileWriter(str(folder)), event_pb2


def write_graph_events(spec: RunSpec, out_dir: Path) -> int:
    """Write one run's traced graphs (the last one logged; TensorBoard shows one) as an
    event file in ``out_dir/<run>``; how many graphs were written (0 or 1)."""
    _history, _reader, update = read_store(spec.source)
    graphs = [r for r in update.extras if r[0] == "graph" and r[4]["graph_def"]]
    if not graphs:
        return 0
    _kind, _tag, _step, wall_time, data = graphs[-1]
    writer, event_pb2 = _event_writer(run_folder(out_dir, spec.name))
    try:
        writer.add_event(event_pb2.Event(wall_time=wall_time, graph_def=data["graph_def"]))
        metadata = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=data["run_metadata"])
        writer.add_event(event_pb2.Event(wall_time=wall_time, tagged_run_metadata=metadata))
    finally:
        writer.close()
    return 1
