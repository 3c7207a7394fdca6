"""remote_train_monitor.SummaryWriter: a TensorBoard script switches by changing one import."""

from __future__ import annotations

import inspect
import io
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter as TBWriter

from remote_train_monitor import SummaryWriter
from run_core.run_lock import RunLockError
from snapshot_store import read_store
from snapshot_store.alerting.alert import Alert
from snapshot_store.format.images import decode_png
from tests.fixtures.runs.tensorboard import (
    exported_records,
    exported_scalars,
    tensorboard_images,
    tensorboard_scalars,
)
from tests.fixtures.runs.training import clean_env
from tests.fixtures.servers.processes import holding, reap
from visualizer.alerts.rules import AlertMemory, AlertWatch
from visualizer.model.rundata import RunData
from visualizer.model.status import last_activity, status_view
from visualizer.model.summary import from_documents, state_shown


def test_scalar_and_image_methods_write_the_store_in_log_dir(tmp_path):
    with SummaryWriter(log_dir=tmp_path / "tb") as writer:
        for step in range(3):
            writer.add_scalar("Loss/train", torch.tensor(1.0 / (step + 1)), step)
            writer.add_scalar("accuracy", 0.5 + step / 10, global_step=step)
            writer.add_scalars("Loss", {"val": 2.0, "test": 3.0}, step)
        writer.add_image("sample", torch.ones(3, 4, 5), 2)
        writer.add_images("batch", np.zeros((4, 8, 8, 3), np.uint8), 2, dataformats="NHWC")
        writer.flush()
        assert writer.get_logdir() == str(tmp_path / "tb")
    history, reader, update = read_store(tmp_path / "tb")
    assert set(history.keys()) == {
        ("Loss", "train"),
        ("", "accuracy"),
        ("Loss", "val"),
        ("Loss", "test"),
    }
    steps, _, _, values = history.series(("Loss", "train"))
    assert steps == [0, 1, 2] and values == [1.0, 0.5, float(torch.tensor(1 / 3))]
    assert history.series(("", "accuracy"))[3] == [0.5, 0.6, 0.7]
    sample, batch = (decode_png(img[5]) for img in update.images)
    assert sample.shape == (4, 5, 3) and (sample == 255).all()
    assert batch.shape == (8, 4 * 8, 3)  # one row: TensorBoard puts up to 8 in a row
    assert update.status["state"] == "finished" and reader.warnings == []


@pytest.mark.parametrize("count", [3, 16, 17])
def test_add_images_tiles_the_batch_as_tensorboard_does(tmp_path, count):
    from torch.utils.tensorboard.summary import image

    batch = torch.rand(count, 3, 100, 100)
    with SummaryWriter(tmp_path) as writer:
        writer.add_images("batch", batch, 0)
    ours = decode_png(read_store(tmp_path)[2].images[0][5])
    theirs = decode_png(image("batch", batch).value[0].image.encoded_image_string)
    assert ours.shape == theirs.shape and (ours == theirs).all()
    if count == 16:
        assert ours.shape == (200, 800, 3)


@pytest.mark.parametrize("count", [1, 3, 5, 16])
def test_add_video_tiles_the_batch_as_tensorboard_does(tmp_path, count):
    from PIL import Image
    from torch.utils.tensorboard._utils import _prepare_video

    video = torch.rand(count, 2, 3, 6, 10)
    with SummaryWriter(tmp_path) as writer:
        writer.add_video("clip", video, 0)
    gif = read_store(tmp_path)[2].extras[0][4]["gif"]
    with Image.open(io.BytesIO(gif)) as frames:
        size = frames.size
    _time, height, width, _channels = _prepare_video(video.numpy()).shape
    assert size == (width, height)


def test_add_scalar_of_cpu_tensors_records_the_value_at_the_call_as_tensorboard(tmp_path, caplog):
    from torch.utils.tensorboard import SummaryWriter as TBWriter

    loss = torch.tensor(2.0)
    with SummaryWriter(tmp_path / "ours", flush_secs=60) as ours, TBWriter(tmp_path / "tb") as tb:
        for writer in (ours, tb):
            writer.add_scalar("Loss/train", 1.5)  # step 0, as TensorBoard's event without a step
            writer.add_scalar("Loss/train", loss, np.int64(3))
        loss.mul_(10)  # changed in place after add_scalar: the values logged stay 2.0
        for writer in (ours, tb):
            writer.add_scalar("Loss/train", loss, 4)
        loss.zero_()
    steps, _, _, values = read_store(tmp_path / "ours")[0].series(("Loss", "train"))
    assert (steps, values) == ([0, 3, 4], [1.5, 2.0, 20.0])
    assert (
        list(zip(steps, values, strict=True)) == tensorboard_scalars(tmp_path / "tb")["Loss/train"]
    )
    assert "changed in place" not in caplog.text


def test_exception_inside_the_context_marks_the_run_failed(tmp_path):
    try:
        with SummaryWriter(tmp_path) as writer:
            writer.add_scalar("loss", 1.0, 0)
            raise RuntimeError("diverged")
    except RuntimeError:
        pass
    assert read_store(tmp_path)[2].status["state"] == "failed"


UNCLOSED = """
import signal
import sys
from remote_train_monitor import SummaryWriter
from run_core.run_lock import RunLockError

writer = SummaryWriter(sys.argv[1])
writer.add_scalar("loss", 1.0, 0)
if sys.argv[2] == "crash":
    raise RuntimeError("diverged")
if sys.argv[2] == "interrupt":
    raise KeyboardInterrupt
if sys.argv[2] == "wait":  # until a signal ends it: SIGTERM, without a handler, kills it
    writer.flush()
    print("logged", flush=True)
    signal.pause()
"""


def _unclosed(tmp_path: Path, ending: str) -> subprocess.Popen[str]:
    script = tmp_path / "unclosed.py"
    script.write_text(UNCLOSED)
    cmd = [sys.executable, str(script), str(tmp_path / "run"), ending]
    return subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, text=True)


@pytest.mark.integration
@pytest.mark.parametrize(
    "ending, state, code",
    [("exit", "finished", 0), ("crash", "failed", 1), ("interrupt", "stopped", -signal.SIGINT)],
)
def test_a_writer_left_open_is_closed_when_the_program_ends(tmp_path, ending, state, code):
    proc = _unclosed(tmp_path, ending)
    try:
        assert proc.wait(timeout=120) == code
    finally:
        reap(proc)
    history, reader, update = read_store(tmp_path / "run")
    assert update.status["state"] == state and history.series(("", "loss"))[3] == [1.0]


@pytest.mark.integration
def test_a_writer_killed_by_sigterm_stays_running_and_the_viewer_tells_it_silent(tmp_path):
    """No handler: SIGTERM ends Python with no exit code run, so nothing can close the store.
    The viewer tells it by its heartbeat: ``running (stale)`` 15 s after the last one
    (docs/viewer.md), and one ``silent`` alert once nothing was logged for the alert's time."""
    proc = _unclosed(tmp_path, "wait")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "logged\n"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        reap(proc)
    _, _, update = read_store(tmp_path / "run")
    status = update.status
    assert status["state"] == "running"
    beat = status["updated"]
    summary = from_documents("run", update.meta, status)
    assert state_shown(summary, beat + 14.9) == "running"
    assert state_shown(summary, beat + 15.1) == "running (stale)"
    assert status_view(status, update.meta, now=beat + 15.1).stale

    sent: list[Alert] = []
    watch = AlertWatch(AlertMemory(tmp_path / "sent.json", "test"), sent.append, silent_after=600)
    run = RunData("run")
    run.apply(update)
    quiet_from = last_activity(status)  # its last value, or its start if none was written yet
    for now in (quiet_from + 599, quiet_from + 600, quiet_from + 601, quiet_from + 3600):
        watch.check([(run, "http://viewer/run")], now)
    assert [alert.event for alert in sent] == ["silent"]


def test_the_tutorials_tags_are_exported_as_tensorboard_wrote_them(tmp_path):
    """The TensorBoard tutorial's calls (``Loss/train``, ``Accuracy/test``) with bare and nested
    tags and an image, written by torch's writer and ours: the same tags, steps and values."""
    from torch.utils.tensorboard import SummaryWriter as TensorBoardWriter

    for writer in (TensorBoardWriter(tmp_path / "tb"), SummaryWriter(tmp_path / "ours")):
        torch.manual_seed(0)
        for step in range(5):
            loss = torch.rand(()) / (step + 1)
            writer.add_scalar("Loss/train", loss, step)
            writer.add_scalar("Loss/test", loss * 1.5, step)
            writer.add_scalar("Accuracy/test", 1 - loss, step)
            writer.add_scalar("loss", loss * 2, step)  # bare: no "scalars/" in front
            writer.add_scalar("train_loss", loss * 3, step)
            writer.add_scalar("a/b/c", loss * 4, step)
        writer.add_image("sample", torch.ones(3, 4, 4), 2)
        writer.close()
    assert exported_scalars(tmp_path / "ours") == tensorboard_scalars(tmp_path / "tb")
    images = {
        tag: sorted(steps) for tag, steps in exported_records(tmp_path / "ours", "image").items()
    }
    assert images == tensorboard_images(tmp_path / "tb") == {"sample": [2]}


@pytest.mark.parametrize("step", [2**63, -(2**63) - 1])
def test_a_step_outside_int64_raises_tensorboards_error_and_writes_nothing(tmp_path, step):
    from torch.utils.tensorboard import SummaryWriter as TBWriter

    tb = TBWriter(str(tmp_path / "tb"))
    with pytest.raises(ValueError) as theirs:
        tb.add_scalar("loss", 1.0, step)
    tb.close()
    with SummaryWriter(tmp_path / "ours") as writer:
        for call in (
            lambda: writer.add_scalar("loss", 1.0, step),
            lambda: writer.add_text("note", "x", step),  # a method that skips bad values
            lambda: writer.add_image("img", np.zeros((3, 4, 4)), step),
        ):
            with pytest.raises(ValueError) as ours:
                call()
            assert isinstance(ours.value, type(theirs.value))
            assert str(ours.value) == str(theirs.value) == f"Value out of range: {step}"
        writer.add_scalar("loss", 2.0, 7)  # the run goes on
    history, reader, update = read_store(tmp_path / "ours")
    assert reader.warnings == [] and update.extras == [] and update.images == []
    assert history.series(("", "loss"))[::3] == ([7], [2.0])


TB_METHODS = sorted(
    name
    for name, _ in inspect.getmembers(TBWriter, inspect.isfunction)
    if not name.startswith("_") or name in ("__init__", "__enter__", "__exit__")
)


def _params(func) -> list[tuple[str, object, object]]:
    """Name, kind and default of each parameter, TensorBoard's extensions (**kwargs) left out."""
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(func).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]


@pytest.mark.parametrize("name", TB_METHODS)
def test_every_method_of_tensorboards_writer_has_its_parameters(name):
    ours = getattr(SummaryWriter, name, None)
    assert ours is not None, f"SummaryWriter has no {name}"
    theirs = _params(getattr(TBWriter, name))
    # Ours may add keyword-only options with a default (add_image's captions, W&B's): every
    # call TensorBoard takes is still taken the same way.
    added = {n for n, kind, default in _params(ours) if kind is inspect.Parameter.KEYWORD_ONLY}
    added -= {n for n, _, _ in theirs}
    kept = [p for p in _params(ours) if p[0] not in added]
    assert kept == theirs
    assert all(
        default is not inspect.Parameter.empty for n, _, default in _params(ours) if n in added
    )


def test_writing_after_close_reopens_the_store_as_tensorboard_does(tmp_path):
    writer = SummaryWriter(tmp_path)
    writer.add_scalar("loss", 1.0, 0)
    writer.close()
    writer.add_scalar("loss", 0.5, 1)
    writer.add_text("note", "after close", 1)
    writer.close()
    with writer:
        writer.add_scalar("loss", 0.25, 2)
    writer.add_histogram("w", np.arange(10.0), 3)
    writer.close()
    history, _, update = read_store(tmp_path)
    assert history.series(("", "loss"))[3] == [1.0, 0.5, 0.25]
    assert [tag for _k, tag, *_ in update.extras] == ["note", "w"]
    assert len(update.meta["sessions"]) == 4 and update.status["state"] == "finished"


def test_walltime_is_kept_and_defaults_to_now(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("given", "a", 1, walltime=1234.5)
        writer.add_text("now", "b", 1)
    walls = {tag: wall for _k, tag, _s, wall, _d in read_store(tmp_path)[2].extras}
    assert walls["given"] == 1234.5 and walls["now"] > 1e9


@pytest.mark.integration
def test_a_second_process_on_the_log_dir_is_refused_naming_the_first(tmp_path):
    """Two processes' writers on one log_dir would each keep a summary of their own series;
    the second is refused before it writes, and the runs table keeps every series."""
    code = (
        "import sys; from remote_train_monitor import SummaryWriter; "
        f"writer = SummaryWriter({str(tmp_path)!r}); "
        "[writer.add_scalar('first', float(i), i) for i in range(200)]; "
        "print('held', flush=True); sys.stdin.read(); writer.close()"
    )
    with holding(code) as first, pytest.raises(RunLockError) as refused:
        SummaryWriter(tmp_path)
    message = str(refused.value)
    assert f"{tmp_path} is being written by another writer, PID {first.pid} on this host" in message
    assert message.endswith("or give this writer another log_dir") and "\n" not in message
    with SummaryWriter(tmp_path) as writer:  # free again once the first closed
        for i in range(200):
            writer.add_scalar("second", float(i), i)
    history, _, update = read_store(tmp_path)
    assert len(history.series(("", "first"))[3]) == len(history.series(("", "second"))[3]) == 200
    assert set(update.status["series"]) == {"first", "second"}
    assert len(update.meta["sessions"]) == 2  # the refused writer wrote nothing


def test_alert_rules_are_judged_by_the_writer_and_sent_once(tmp_path, receiver):
    """``SummaryWriter(alert_rules=...)``: the trainer's ``--alert-rule``, for people's own loops."""
    with SummaryWriter(tmp_path / "run", alert_rules=["loss>1"], alert_webhook=receiver.url) as w:
        for step, loss in enumerate([0.5, 2.0, 3.0]):
            w.add_scalar("loss", loss, step)
    assert [a["event"] for _, a in receiver.of("run")] == ["rule", "finished"]  # in order
    with pytest.raises(ValueError, match="judges against a baseline run"):
        SummaryWriter(
            tmp_path / "refused", alert_rules="slower:samples_per_s", alert_webhook=receiver.url
        )
    assert not (tmp_path / "refused").exists(), "refused before the store is touched"
