"""PagedSource: a long history is read a page at a time, and nothing is lost or read twice."""

from __future__ import annotations

from snapshot_store import Recorder
from snapshot_store.reader import LocalSource, StoreReader, read_store
from visualizer.model import RunData
from visualizer.paging import PagedSource


def test_pages_add_up_to_the_whole_store(tmp_path):
    store = tmp_path / "run" / "pickle"
    with Recorder(store, flush_interval=0.01, segment_bytes=2_000, handle_signals=False) as rec:
        for step in range(3_000):
            rec.log({"loss": float(step)}, step=step)
            if step % 500 == 0:
                rec.flush()
    segments = [p for p in store.iterdir() if p.name.startswith("scalars-")]
    assert len(segments) > 3
    source = PagedSource(LocalSource(store), page_bytes=1)  # one segment per page
    reader, data, polls = StoreReader(source), RunData("run"), 0
    while True:
        update = reader.poll()
        polls += 1
        data.apply(update)
        if not source.more:
            break
    assert polls == len(segments), "one segment per page: the history never sits in memory whole"
    history, _, _ = read_store(store)
    steps, _, _, values = history.series(("train", "loss"))
    assert data.series[("train", "loss")].steps().tolist() == steps
    assert data.series[("train", "loss")].values().tolist() == values
    assert not reader.poll(), "everything was read once"
