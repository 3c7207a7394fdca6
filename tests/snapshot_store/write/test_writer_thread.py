"""The writer thread: every written file announced, a full disk held up to the byte cap,
a value that breaks conversion."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from snapshot_store import Recorder, RecorderError, read_store
from tests.fixtures.servers.processes import run_python


@pytest.mark.integration
def test_full_disk_keeps_the_store_readable_and_reports_it(tmp_path):
    # RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG: a real full-disk error.
    proc = run_python(
        """
        import resource, signal, sys
        from snapshot_store import Recorder
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        rec = Recorder(sys.argv[1], rank=0, segment_bytes=1 << 30)
        for step in range(20000):
            rec.log({"loss": float(step)}, step=step)
            if step % 1000 == 0:
                rec.flush()
        rec.close()
    """,
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert "can not write scalars" in proc.stderr and "free disk space" in proc.stderr
    history, reader, _ = read_store(tmp_path)
    steps = history.series(("train", "loss"))[0]
    assert reader.warnings == []  # no torn or corrupt frame was left behind
    assert 0 < len(steps) < 20000 and steps == list(range(len(steps)))


@pytest.mark.integration
def test_a_disk_that_stays_full_ends_in_one_error_at_the_byte_cap_not_a_growing_heap(tmp_path):
    # As above, RLIMIT_FSIZE makes the disk full; the frames waiting for it are capped.
    proc = run_python(
        """
        import resource, signal, sys, tracemalloc
        from snapshot_store import Recorder, RecorderError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        cap = 4 << 20
        rec = Recorder(sys.argv[1], rank=0, segment_bytes=1 << 30, max_pending_bytes=cap)
        tracemalloc.start()
        for step in range(2_000_000):
            try:
                rec.log({"loss": float(step), "lr": 0.1}, step=step)
                if step % 1000 == 0:
                    rec.flush()
            except RecorderError as err:
                print("raised at", step, "peak", tracemalloc.get_traced_memory()[1] / cap)
                print(err)
                break
        for call in (lambda: rec.log({"loss": 1.0}, step=0), rec.close):
            try:
                call()
            except RecorderError:
                print("raised again")
    """,
        str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    first, message, *again = proc.stdout.splitlines()
    _, _, step, _, peak = first.split()
    # 4 MiB of frames at 4 x 8 bytes a value, two values a step (and the 64 KiB written)
    assert 50_000 < int(step) < 80_000, first
    assert float(peak) < 1.5  # the cap, and one batch being framed
    assert "above max_pending_bytes=4,194,304" in message and "Free disk space" in message
    assert again == ["raised again", "raised again"]
    history, reader, update = read_store(tmp_path)
    assert reader.warnings == [] and update.status["state"] == "failed"
    assert 0 < len(history.series(("train", "loss"))[0]) < int(step)


def test_a_stalled_writer_stops_the_queue_at_the_byte_cap_keeping_what_was_queued(tmp_path):
    release = threading.Event()
    # on_file runs on the writer thread: blocking it stalls the writer as a hung disk would.
    rec = Recorder(tmp_path, rank=0, max_pending_bytes=1 << 20, on_file=lambda *_: release.wait())
    logged = 0
    with pytest.raises(RecorderError, match=r"above max_pending_bytes=1,048,576"):
        for step in range(1_000_000):
            rec.log_scalar("loss", float(step), step)
            logged += 1
    assert 1000 < logged < 20_000  # records of a few hundred bytes, not a growing heap
    with pytest.raises(RecorderError, match="max_pending_bytes"):
        rec.log({"loss": 1.0}, step=0)
    release.set()
    with pytest.raises(RecorderError, match="max_pending_bytes"):
        rec.close()
    history, _, update = read_store(tmp_path)
    assert history.series(("train", "loss"))[0] == list(range(logged + 1))  # the last one too
    assert update.status["state"] == "failed"


class _Announced:
    """An ``on_file`` that records every call, with the file's size at that moment."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bool, int]] = []

    def __call__(self, path: Path, closed: bool) -> None:
        assert isinstance(path, Path) and isinstance(closed, bool)
        self.calls.append((path.name, closed, path.stat().st_size))

    def of(self, name: str) -> list[tuple[bool, int]]:
        return [(closed, size) for n, closed, size in self.calls if n == name]


def test_every_written_file_is_announced_open_then_closed(tmp_path):
    on_file = _Announced()
    rec = Recorder(tmp_path, rank=0, on_file=on_file, segment_bytes=200, flush_interval=60.0)
    for step in range(3):
        rec.log({"loss": float(step)}, step=step)
        assert rec.flush()
    rec.log_image("img", np.zeros((2, 2), np.uint8), step=2, dataformats="HW")
    rec.close()

    assert on_file.calls[0][:2] == ("meta.pickle", True)  # first, and once
    assert on_file.of("meta.pickle") == [(True, (tmp_path / "meta.pickle").stat().st_size)]
    segments = sorted(p.name for p in tmp_path.glob("scalars-*.pickle"))
    assert len(segments) >= 2  # rolled at 200 bytes
    for name in segments:
        calls = on_file.of(name)
        final = (tmp_path / name).stat().st_size
        assert calls[-1] == (True, final)  # announced closed once complete
        assert [closed for closed, _ in calls].count(True) == 1
        assert all(not closed for closed, _ in calls[:-1])  # open while it grew
    assert on_file.of("images-00000000.pickle")[-1][0] is True
    status = on_file.of("status.pickle")
    assert status[0][0] is False and status[-1][0] is True  # closed once the run ended
    assert read_store(tmp_path)[2].status["state"] == "finished"


def test_a_value_that_breaks_conversion_stops_the_writer_instead_of_losing_batches(tmp_path):
    class Odd:
        def item(self) -> float:
            raise LookupError("no value here")

    rec = Recorder(tmp_path, rank=0, flush_interval=60.0)
    rec.log({"loss": Odd()}, step=0)

    with pytest.raises(RecorderError, match="LookupError: no value here"):
        rec.flush()
    with pytest.raises(RecorderError):
        rec.close()
    assert read_store(tmp_path)[2].status["state"] == "failed"
