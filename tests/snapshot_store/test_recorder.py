"""The recorder: round trip, rank gating, resume, announced files, writer failures, full disks."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from snapshot_store import REDACTED, Recorder, RecorderError, StoreError, read_store
from snapshot_store.images import decode_png
from tests.fixtures.net import free_port

REPO = Path(__file__).resolve().parents[2]


def _run_python(
    code: str, *args: str, env: dict | None = None, **kwargs
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def test_round_trip_scalars_images_meta_status(tmp_path):
    store = tmp_path / "exp" / "pickle"
    with Recorder(store, options={"lr": 0.1, "s3_secret": "x"}, world_size=2, rank=0) as rec:
        for step in range(5):
            rec.log(
                {"loss_G": 1.0 / (step + 1), "loss_D": np.float32(step)}, step=step, epoch=step / 4
            )
        rec.log({"acc": 0.5}, step=4, group="val")
        rec.log_image("fake", np.full((3, 4, 6), 0.5), step=4)
        rec.log_image("batch", np.zeros((3, 1, 4, 4), np.uint8), step=4, dataformats="NCHW")
        rec.set_status(total_steps=10)
    history, reader, update = read_store(store)
    assert history.keys() == [("train", "loss_G"), ("train", "loss_D"), ("val", "acc")]
    steps, epochs, times, values = history.series(("train", "loss_G"))
    assert steps == [0, 1, 2, 3, 4] and epochs == [0, 0.25, 0.5, 0.75, 1.0]
    assert values == [1.0, 0.5, 1 / 3, 0.25, 0.2] and all(t > 1e9 for t in times)
    assert update.meta["name"] == "exp" and update.meta["world_size"] == 2
    assert update.meta["options"] == {"lr": 0.1, "s3_secret": REDACTED}
    assert update.status["state"] == "finished" and update.status["step"] == 4
    assert update.status["total_steps"] == 10
    names = [img[1] for img in update.images]
    assert names == ["fake", "batch"]
    fake = decode_png(update.images[0][5])
    assert fake.shape == (4, 6, 3) and (fake == 128).all()
    assert reader.warnings == []


def test_the_status_step_is_the_furthest_step_not_the_last_logged(tmp_path):
    # add_hparams logs its metrics at step 0 after training: the status said step 0.
    store = tmp_path / "exp" / "pickle"
    with Recorder(store) as rec:
        rec.log({"loss": 1.0}, step=120)
        rec.log({"hparam/loss": 0.5}, step=0, group="hparams")
    assert read_store(store)[2].status["step"] == 120


def test_values_that_are_not_numbers_are_dropped_with_a_warning(tmp_path, caplog):
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 1.0, "note": "hello"}, step=0)
    history, _, _ = read_store(tmp_path)
    assert history.keys() == [("train", "loss")]
    assert "train/note" in caplog.text and "not a number" in caplog.text


def test_non_zero_rank_touches_no_file(tmp_path, monkeypatch):
    # What torchrun tells rank 1 of 2; the recorder asks snapshot_store.rank.
    for name, value in {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }.items():
        monkeypatch.setenv(name, value)
    announced: list[tuple[Path, bool]] = []
    rec = Recorder(tmp_path / "run" / "pickle", on_file=lambda *args: announced.append(args))
    rec.log({"loss": 1.0}, step=0)
    rec.log_image("x", np.zeros((2, 2)), step=0, dataformats="HW")
    rec.set_status(total_steps=3)
    assert rec.flush() is True
    rec.close()
    assert (rec.rank, rec.is_rank_zero) == (1, False)
    assert list(tmp_path.iterdir()) == [] and announced == []


@pytest.mark.integration
def test_only_rank_zero_writes_under_real_torchrun(tmp_path):
    store = tmp_path / "ddp" / "pickle"
    script = tmp_path / "worker.py"
    script.write_text(
        textwrap.dedent("""
        import os, sys
        import torch.distributed as dist
        from snapshot_store import Recorder
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        rec = Recorder(sys.argv[1], world_size=dist.get_world_size())
        for step in range(20):
            rec.log({"rank": float(rank)}, step=step)
        rec.close()
        dist.barrier()
        dist.destroy_process_group()
    """)
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(free_port()),
            str(script),
            str(store),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    history, reader, update = read_store(store)
    steps, _, _, values = history.series(("train", "rank"))
    assert steps == list(range(20)) and set(values) == {0.0}
    assert update.meta["world_size"] == 2 and update.status["state"] == "finished"
    assert reader.warnings == []


def test_resumed_run_appends_and_replaces_repeated_steps(tmp_path):
    for session, steps in enumerate((range(10), range(8, 15))):
        with Recorder(tmp_path, rank=0) as rec:
            for step in steps:
                rec.log({"loss": float(session)}, step=step)
    segments = sorted(p.name for p in tmp_path.glob("scalars-*"))
    assert segments == ["scalars-00000000.pickle", "scalars-00000001.pickle"]
    history, _, update = read_store(tmp_path)
    steps, _, _, values = history.series(("train", "loss"))
    assert steps == list(range(15)) and values == [0.0] * 8 + [1.0] * 7
    assert len(update.meta["sessions"]) == 2


def test_unwritable_store_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(StoreError, match=r"can not write the snapshot store .*file/run/pickle"):
        Recorder(blocker / "run" / "pickle", rank=0)


@pytest.mark.integration
def test_full_disk_keeps_the_store_readable_and_reports_it(tmp_path):
    # RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG: a real full-disk error.
    proc = _run_python(
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
    proc = _run_python(
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


# --- files announced to on_file ------------------------------------------------------


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


# --- writer failures surface on the caller's next call --------------------------------


class _HookBugError(RuntimeError):
    pass


def _failing_on(stream: str, closed: bool | None = None):
    """An ``on_file`` that raises for segments of ``stream`` (announced ``closed``, if given)."""

    def on_file(path: Path, is_closed: bool) -> None:
        if path.name.startswith(stream) and closed in (None, is_closed):
            raise _HookBugError(f"hook bug on {path.name}")

    return on_file


def test_a_writer_failure_is_raised_by_every_later_call_and_leaves_the_data_readable(tmp_path):
    store = tmp_path / "run" / "pickle"
    rec = Recorder(store, rank=0, on_file=_failing_on("scalars"), flush_interval=60.0)
    for step in range(10):
        rec.log({"loss": float(step)}, step=step)

    with pytest.raises(RecorderError) as caught:
        rec.flush()

    assert isinstance(caught.value, StoreError)
    assert str(store) in str(caught.value) and "hook bug" in str(caught.value)
    assert isinstance(caught.value.__cause__, _HookBugError)
    for call in (
        lambda: rec.log({"loss": 1.0}, step=10),
        lambda: rec.log_image("x", np.zeros((2, 2)), step=10, dataformats="HW"),
        lambda: rec.set_status(total_steps=20),
        rec.flush,
    ):
        with pytest.raises(RecorderError, match="hook bug") as again:
            call()
        assert isinstance(again.value.__cause__, _HookBugError)
    with pytest.raises(RecorderError, match="hook bug"):
        rec.close()
    with pytest.raises(RecorderError, match="hook bug"):
        rec.close()  # and again

    history, reader, update = read_store(store)
    assert history.series(("train", "loss"))[0] == list(range(10))  # written before the failure
    assert update.status["state"] == "failed"
    assert reader.warnings == []
    assert not [p for p in store.iterdir() if p.name.startswith(".")]


def test_a_failure_while_closing_is_raised_by_close_and_marks_the_run_failed(tmp_path):
    rec = Recorder(tmp_path, rank=0, on_file=_failing_on("scalars", closed=True))
    for step in range(5):
        rec.log({"loss": float(step)}, step=step)
    assert rec.flush()  # open segments are announced without trouble

    with pytest.raises(RecorderError, match=r"hook bug on scalars-00000000\.pickle"):
        rec.close()

    history, reader, update = read_store(tmp_path)
    assert history.series(("train", "loss"))[0] == list(range(5))
    assert update.status["state"] == "failed"
    assert reader.warnings == []


def test_a_failure_inside_a_with_block_does_not_hide_the_blocks_own_error(tmp_path, caplog):
    recorder = Recorder(tmp_path, rank=0, on_file=_failing_on("scalars"), flush_interval=60.0)
    with pytest.raises(KeyError, match="training bug"), recorder as rec:
        rec.log({"loss": 1.0}, step=0)
        with pytest.raises(RecorderError):
            rec.flush()
        raise KeyError("training bug")

    assert "hook bug" in caplog.text  # reported, not lost
    assert read_store(tmp_path)[2].status["state"] == "failed"


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


@pytest.mark.parametrize(
    ("error", "state"), [(KeyboardInterrupt, "stopped"), (ValueError, "failed"), (None, "finished")]
)
def test_the_context_manager_marks_how_the_run_ended(tmp_path, error, state):
    expected = pytest.raises(error) if error else contextlib.nullcontext()
    with expected, Recorder(tmp_path, world_size=1) as rec:
        rec.log({"train/loss": 1.0}, step=0)
        if error:
            raise error()
    assert read_store(tmp_path)[2].status["state"] == state


def test_options_set_after_opening_replace_the_stored_ones_redacted(tmp_path):
    sent = []
    with Recorder(tmp_path, options={"lr": 0.1}, on_file=lambda p, closed: sent.append(p)) as rec:
        rec.set_options({"lr": 0.2, "api_key": "PW-canary"})
    meta = read_store(tmp_path)[2].meta
    assert meta["options"] == {"lr": 0.2, "api_key": REDACTED}
    assert sent.count(tmp_path / "meta.pickle") == 2  # at open, and after the change
