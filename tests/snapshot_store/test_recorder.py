"""The recorder: round trip, rank gating, resume, signals, exit, full disks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from snapshot_store import Recorder, StoreError, read_store
from snapshot_store import frames as fmt
from snapshot_store.images import decode_png
from tests.fixtures.net import free_port

REPO = Path(__file__).resolve().parents[2]


def _run_python(code: str, *args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=REPO, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120, **kwargs,
    )


def test_round_trip_scalars_images_meta_status(tmp_path):
    store = tmp_path / "exp" / "pickle"
    with Recorder(store, options={"lr": 0.1, "s3_secret": "x"}, world_size=2, rank=0,
                  handle_signals=False) as rec:
        for step in range(5):
            rec.log({"loss_G": 1.0 / (step + 1), "loss_D": np.float32(step)}, step=step,
                    epoch=step / 4)
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
    assert update.meta["options"] == {"lr": 0.1, "s3_secret": fmt.REDACTED}
    assert update.status["state"] == "finished" and update.status["step"] == 4
    assert update.status["total_steps"] == 10
    names = [img[1] for img in update.images]
    assert names == ["fake", "batch"]
    fake = decode_png(update.images[0][5])
    assert fake.shape == (4, 6, 3) and (fake == 128).all()
    assert reader.warnings == []


def test_values_that_are_not_numbers_are_dropped_with_a_warning(tmp_path, caplog):
    with Recorder(tmp_path, rank=0, handle_signals=False) as rec:
        rec.log({"loss": 1.0, "note": "hello"}, step=0)
    history, _, _ = read_store(tmp_path)
    assert history.keys() == [("train", "loss")]
    assert "train/note" in caplog.text and "not a number" in caplog.text


def test_logged_tensor_is_frozen_at_log_time(tmp_path):
    torch = pytest.importorskip("torch")
    value = torch.tensor(1.0)
    with Recorder(tmp_path, rank=0, handle_signals=False) as rec:
        rec.log({"loss": value}, step=0)
        value.add_(41.0)  # in-place change after log(): must not alter what was logged
        rec.log({"loss": value}, step=1)
    history, _, _ = read_store(tmp_path)
    assert history.series(("train", "loss"))[3] == [1.0, 42.0]


def test_non_zero_rank_touches_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    rec = Recorder(tmp_path / "run" / "pickle", handle_signals=False)
    rec.log({"loss": 1.0}, step=0)
    rec.log_image("x", np.zeros((2, 2)), step=0, dataformats="HW")
    assert rec.save_checkpoint({"a": 1}, "latest.pth") is None
    rec.close()
    assert list(tmp_path.iterdir()) == []


def test_rank_precedence(monkeypatch):
    from snapshot_store import detect_rank

    for var in ("RANK", "SLURM_PROCID", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    assert detect_rank() == 0
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert detect_rank() == 3
    monkeypatch.setenv("SLURM_PROCID", "5")
    assert detect_rank() == 5
    monkeypatch.setenv("RANK", "0")
    assert detect_rank() == 0
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match="RANK='x'"):
        detect_rank()


def test_only_rank_zero_writes_under_real_torchrun(tmp_path):
    store = tmp_path / "ddp" / "pickle"
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent("""
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
    """))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--master_addr", "127.0.0.1", "--master_port", str(free_port()), str(script), str(store)],
        cwd=REPO, capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    history, reader, update = read_store(store)
    steps, _, _, values = history.series(("train", "rank"))
    assert steps == list(range(20)) and set(values) == {0.0}
    assert update.meta["world_size"] == 2 and update.status["state"] == "finished"
    assert reader.warnings == []


def test_resumed_run_appends_and_replaces_repeated_steps(tmp_path):
    for session, steps in enumerate((range(0, 10), range(8, 15))):
        with Recorder(tmp_path, rank=0, handle_signals=False) as rec:
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
        Recorder(blocker / "run" / "pickle", rank=0, handle_signals=False)


def test_sigterm_during_writing_loses_nothing_already_logged(tmp_path):
    code = """
        import sys, time
        from snapshot_store import Recorder
        rec = Recorder(sys.argv[1], rank=0, flush_interval=5.0)  # no flush would come in time
        step = 0
        while True:
            rec.log({"loss": float(step)}, step=step)
            print(step, flush=True)
            step += 1
            time.sleep(0.001)
    """
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(tmp_path)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    last = -1
    for line in proc.stdout:
        last = int(line)
        if last >= 300:
            break
    proc.send_signal(signal.SIGTERM)
    proc.stdout.close()
    assert proc.wait(timeout=60) == -signal.SIGTERM  # still dies of the signal, as expected
    history, _, update = read_store(tmp_path)
    steps = history.series(("train", "loss"))[0]
    assert steps[: last + 1] == list(range(last + 1))
    assert update.status["state"] == "failed"


def test_interpreter_exit_flushes_without_close(tmp_path):
    proc = _run_python("""
        import sys
        from snapshot_store import Recorder
        rec = Recorder(sys.argv[1], rank=0, flush_interval=60.0)
        for step in range(1000):
            rec.log({"loss": 1.0}, step=step)
    """, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    history, _, update = read_store(tmp_path)
    assert history.series(("train", "loss"))[0] == list(range(1000))
    assert update.status["state"] == "finished"


def test_uncaught_exception_marks_the_run_failed(tmp_path):
    proc = _run_python("""
        import sys
        from snapshot_store import Recorder
        rec = Recorder(sys.argv[1], rank=0)
        rec.log({"loss": 1.0}, step=0)
        raise RuntimeError("boom")
    """, str(tmp_path))
    assert proc.returncode == 1 and "boom" in proc.stderr
    assert read_store(tmp_path)[2].status["state"] == "failed"


def test_full_disk_keeps_the_store_readable_and_reports_it(tmp_path):
    # RLIMIT_FSIZE makes writes past 64 KiB fail with EFBIG: a real full-disk error.
    proc = _run_python("""
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
    """, str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "can not write scalars" in proc.stderr and "free disk space" in proc.stderr
    history, reader, _ = read_store(tmp_path)
    steps = history.series(("train", "loss"))[0]
    assert reader.warnings == []  # no torn or corrupt frame was left behind
    assert 0 < len(steps) < 20000 and steps == list(range(len(steps)))


def test_checkpoint_is_atomic_and_handed_to_the_transfer_hook(tmp_path):
    torch = pytest.importorskip("torch")
    sent: list[tuple[str, str]] = []

    def hook(source_path, relative_path):
        sent.append((source_path, relative_path))

    store = tmp_path / "run" / "pickle"
    with Recorder(store, transfer=hook, rank=0, handle_signals=False) as rec:
        path = rec.save_checkpoint({"w": torch.ones(3), "epoch": 1}, "latest.pth")
    assert path == tmp_path / "run" / "latest.pth"
    assert torch.load(path, weights_only=True)["epoch"] == 1
    relative = {rel for _, rel in sent}
    assert {"run/latest.pth", "run/pickle/meta.pickle", "run/pickle/status.pickle"} <= relative
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.startswith(".")]


def test_uploads_grow_linearly_closed_segments_sent_once_when_final(tmp_path):
    from transfer_plugins.runner import TransferRunner

    sends: list[tuple[str, int]] = []

    def hook(source_path, relative_path):
        sends.append((relative_path, Path(source_path).stat().st_size))

    min_interval = 0.05
    runner = TransferRunner(hook, tmp_path, min_interval=min_interval)
    store = tmp_path / "run" / "pickle"
    rec = Recorder(store, transfer=runner, rank=0, handle_signals=False, flush_interval=0.01,
                   segment_bytes=4096, segment_seconds=0.2)
    for step in range(4000):
        rec.log({"loss": float(step)}, step=step)
        if step % 50 == 0:
            time.sleep(0.01)
    assert rec.close() == []
    segments = sorted(store.glob("scalars-*.pickle"))
    assert len(segments) >= 3
    logged = sum(p.stat().st_size for p in segments)
    for seg in segments:
        sizes = [size for rel, size in sends if rel == f"run/pickle/{seg.name}"]
        assert sizes[-1] == seg.stat().st_size  # the last send is the closed, final file
        assert sizes.count(seg.stat().st_size) <= 2  # a closed segment is not sent over and over
    shipped = sum(size for rel, size in sends if "scalars-" in rel)
    # Each segment is resent at most once per min_interval while open: bytes
    # shipped are a bounded multiple of bytes logged, not quadratic in them.
    assert shipped <= logged * (0.2 / min_interval + 2)
