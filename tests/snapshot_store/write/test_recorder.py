"""The recorder's front: round trip, rank gating, writer failures raised on the next call,
how a run ends."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from run_core.exit_codes import ExitCode
from run_core.redaction import REDACTED
from run_core.run_lock import LOCK_NAME
from snapshot_store import Recorder, RecorderError, StoreError, read_store
from snapshot_store.format.images import decode_png
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.processes import REPO


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


def test_values_that_are_not_numbers_are_dropped_with_a_warning(tmp_path, caplog):
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": 1.0, "note": "hello"}, step=0)
    history, _, _ = read_store(tmp_path)
    assert history.keys() == [("train", "loss")]
    assert "train/note" in caplog.text and "not a number" in caplog.text


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


# --- files announced to on_file ------------------------------------------------------


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
    assert [p.name for p in store.iterdir() if p.name.startswith(".")] == [LOCK_NAME]  # no tmp
    assert (store / LOCK_NAME).read_bytes() == b""  # the failed writer freed the store


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


@pytest.mark.parametrize(
    ("error", "state"),
    [
        (KeyboardInterrupt(), "stopped"),
        (
            SystemExit(ExitCode.TERMINATED),
            "stopped",
        ),  # SIGTERM unwinding (trainer.training.interrupts)
        (SystemExit(0), "finished"),  # sys.exit(0) in the block: the program ends well
        (SystemExit("bad config"), "failed"),  # Python exits 1 for a message
        (ValueError(), "failed"),
        (None, "finished"),
    ],
)
def test_the_context_manager_marks_how_the_run_ended(tmp_path, error, state):
    expected = pytest.raises(type(error)) if error else contextlib.nullcontext()
    with expected, Recorder(tmp_path, world_size=1) as rec:
        rec.log({"train/loss": 1.0}, step=0)
        if error:
            raise error
    assert read_store(tmp_path)[2].status["state"] == state


@pytest.mark.parametrize("step", [2**63, -(2**63) - 1, np.uint64(2**63), 2.0**63])
def test_a_step_outside_int64_is_refused_at_the_call_and_the_run_goes_on(tmp_path, step):
    # The reader drops a record whose step is past int64: it is refused where it is logged,
    # with TensorBoard's error ("Value out of range"), and nothing of it is written.
    message = f"^Value out of range: {int(step)}$"
    with Recorder(tmp_path, rank=0) as rec:
        for call in (
            lambda: rec.log({"loss": 1.0}, step=step),
            lambda: rec.log_scalar("loss", 1.0, step),
            lambda: rec.log_image("img", np.zeros((4, 4, 3), np.uint8), step, dataformats="HWC"),
            lambda: rec.log_record("text", "note", {"text": "x"}, step),
        ):
            with pytest.raises(ValueError, match=message):
                call()
        rec.log_scalar("loss", 3.0, -(2**63))  # the bounds themselves are steps
        rec.log({"loss": 2.0}, step=2**63 - 1)
        rec.log_record("text", "note", {"text": "y"}, 5)
    history, reader, update = read_store(tmp_path)
    assert reader.warnings == []
    assert history.series(("train", "loss"))[::3] == ([-(2**63), 2**63 - 1], [3.0, 2.0])
    assert [(tag, step) for _kind, tag, step, _w, _d in update.extras] == [("note", 5)]
    assert update.images == []
