"""Logged tensors: CPU values read at log(), others held by reference, converted in one batch
per flush, in-place changes caught.

Without a GPU, the deferred path is proved with meta tensors (a device without data)
and with CPU tensors handed to its parts directly; the ``cuda`` tests run it whole
where a GPU is present.
"""

from __future__ import annotations

import logging

import pytest

from snapshot_store import Recorder, RecorderError, read_store
from snapshot_store.write.scalar_columns import ScalarColumns
from snapshot_store.write.tensor_values import Pending, held, to_floats

torch = pytest.importorskip("torch")
from torch.profiler import ProfilerActivity, profile  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _ops(fn) -> dict[str, int]:
    """aten operators ``fn`` dispatches on this thread, with their counts."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("aten::")}


def _values(store, key=("train", "loss")):
    history, _, _ = read_store(store)
    return history.series(key)[0], history.series(key)[3]


READ = {"aten::item": 1, "aten::_local_scalar_dense": 1}  # a CPU tensor's value read, no copy


def test_a_cpu_tensor_is_read_at_log_with_one_item_and_no_copy(tmp_path):
    loss = torch.tensor(0.5)
    with Recorder(tmp_path, rank=0, flush_interval=60) as rec:
        assert _ops(lambda: rec.log({"loss": loss, "lr": 0.1}, step=0)) == READ
        # A loss with a graph: read as it is, no detach (no warning either).
        with_graph = torch.ones((), requires_grad=True) * 2
        assert _ops(lambda: rec.log_scalar("loss", with_graph, step=1)) == READ
        one_element = torch.full((1,), 3)
        assert _ops(lambda: rec.log({"n": one_element}, step=1)) == READ
    assert _values(tmp_path) == ([0, 1], [0.5, 2.0])
    assert _values(tmp_path, ("train", "n")) == ([1], [3.0])


def test_a_device_tensor_is_kept_by_reference_dispatching_no_operator(tmp_path):
    # A meta tensor is on a device, not the CPU, as a CUDA tensor; it has no data,
    # so the writer thread's copy fails and close() says so, naming it.
    rec = Recorder(tmp_path, rank=0, flush_interval=60)
    on_device = torch.ones((), device="meta")
    assert _ops(lambda: rec.log({"grad_norm": on_device}, step=0)) == {}
    with_graph = torch.ones((), device="meta", requires_grad=True) * 2
    assert _ops(lambda: rec.log_scalar("loss", with_graph, step=0)) == {"aten::detach": 1}
    with pytest.raises(RecorderError, match=r"train/grad_norm, train/loss.*meta"):
        rec.close()


def test_held_keeps_a_device_tensor_with_its_version_and_copies_it_when_asked():
    on_device = torch.ones((), device="meta")
    kept = held(on_device, copy=False)
    assert type(kept) is Pending and kept.tensor is on_device and kept.version == 0
    on_device.add_(1)
    copied = held(on_device, copy=True)
    assert copied.tensor is not on_device and copied.version == 0
    assert held(torch.tensor(True), copy=False) == 1.0
    assert type(held(torch.ones(3), copy=False)) is Pending  # dropped by the writer, warned


def test_pending_values_of_all_names_are_converted_with_one_stack_per_dtype():
    items = [(f"train/v{i}", Pending(torch.tensor(float(i)), 0)) for i in range(50)]
    items.append(("train/count", Pending(torch.tensor(7), 0)))
    ops = _ops(lambda: to_floats(items))
    assert ops["aten::stack"] == 2  # float32 and int64: not one copy per value
    assert "aten::item" not in ops and "aten::_local_scalar_dense" not in ops
    assert [item.value for _, item in items] == [*map(float, range(50)), 7.0]


def test_mixed_dtypes_and_devices_round_trip(tmp_path):
    with Recorder(tmp_path, rank=0) as rec:
        for step in range(3):
            rec.log(
                {
                    "loss": torch.tensor(step / 2),
                    "half": torch.tensor(step, dtype=torch.float16),
                    "flag": torch.tensor(step > 0),
                    "one": torch.full((1,), step + 0.5),  # stacked apart from the 0-dim ones
                    "plain": float(step),
                },
                step=step,
            )
    history, reader, _ = read_store(tmp_path)
    assert history.series(("train", "loss"))[3] == [0.0, 0.5, 1.0]
    assert history.series(("train", "half"))[3] == [0.0, 1.0, 2.0]
    assert history.series(("train", "flag"))[3] == [0.0, 1.0, 1.0]
    assert history.series(("train", "one"))[3] == [0.5, 1.5, 2.5]
    assert history.series(("train", "plain"))[3] == [0.0, 1.0, 2.0]
    assert reader.warnings == []


def test_a_cpu_tensor_changed_in_place_after_log_keeps_its_logged_value(tmp_path, caplog):
    running = torch.tensor(1.0)
    with Recorder(tmp_path, rank=0, flush_interval=60) as rec:
        rec.log({"loss": running}, step=0)
        running.add_(41.0)
        rec.log_scalar("loss", running, step=1)
        running.zero_()
    assert _values(tmp_path) == ([0, 1], [1.0, 42.0])
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_held_tensor_changed_in_place_is_dropped_once_and_its_name_copied_from_then_on(caplog):
    running = torch.tensor(1.0)
    columns = ScalarColumns()
    changed = Pending(running, running._version)
    running.add_(41.0)  # the value at log() time is gone: it must not be recorded as 42
    kept = Pending(torch.tensor(5.0), 0)
    # The queue's flat records: group, name, step, epoch, wall time, value.
    records = ["train", "loss", 0, 0.0, 1.0, changed, "train", "acc", 0, 0.0, 1.0, kept]
    series, last, failures = columns.convert(records)
    assert [(group, name, list(values)) for group, name, *_, values in series] == [
        ("train", "acc", [5.0])
    ]
    assert last == 0 and failures == []
    assert columns.copied == {("train", "loss")}  # the recorder copies it at log() from now on
    columns.convert(["train", "loss", 1, 0.0, 1.0, Pending(running, running._version)])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "train/loss" in warnings[0] and "changed in place" in warnings[0]
    assert "t.detach().clone()" in warnings[0] and "t.item()" in warnings[0]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [(torch.ones(3), "has 3 elements"), (torch.tensor(1 + 2j), "is complex")],
    ids=["multi-element", "complex"],
)
def test_bad_tensors_are_dropped_with_one_warning_naming_the_tag(tmp_path, caplog, bad, problem):
    with Recorder(tmp_path, rank=0) as rec:
        for step in range(3):
            rec.log({"loss": torch.tensor(1.0), "bad": bad}, step=step)
    history, _, _ = read_store(tmp_path)
    assert history.keys() == [("train", "loss")]
    assert history.series(("train", "loss"))[3] == [1.0, 1.0, 1.0]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "train/bad" in warnings[0] and problem in warnings[0]


def test_non_finite_tensors_are_kept_as_floats_are(tmp_path):
    with Recorder(tmp_path, rank=0) as rec:
        rec.log({"loss": torch.tensor(float("inf"))}, step=0)
    assert _values(tmp_path) == ([0], [float("inf")])


def test_a_failed_device_copy_is_raised_naming_the_tags_and_earlier_values_are_kept(tmp_path):
    # A meta tensor has a device but no data: copying it fails as a broken device would.
    rec = Recorder(tmp_path, rank=0, flush_interval=60)
    rec.log({"loss": torch.tensor(1.0)}, step=0)
    rec.flush()
    rec.log({"loss": torch.tensor(2.0), "grad_norm": torch.tensor(3.0, device="meta")}, step=1)
    with pytest.raises(RecorderError, match=r"train/grad_norm.*meta") as failure:
        rec.flush()
    assert "train/loss" not in str(failure.value)  # the CPU values copied fine
    with pytest.raises(RecorderError, match="train/grad_norm"):
        rec.log({"loss": 3.0}, step=2)
    with pytest.raises(RecorderError):
        rec.close()
    history, _, update = read_store(tmp_path)
    assert history.series(("train", "loss"))[3] == [1.0, 2.0]
    assert update.status["state"] == "failed"


@pytest.mark.cuda
@needs_cuda
def test_cuda_tensors_are_deferred_and_converted_in_one_batch(tmp_path):
    values = [torch.tensor(float(i), device="cuda") for i in range(20)]
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities) as empty:
        pass  # what the profiler calls itself: its exit synchronises the device (seen on an H200)
    own = {e.key: e.count for e in empty.key_averages()}
    with Recorder(tmp_path, rank=0, flush_interval=60) as rec:
        with profile(activities=activities) as prof:
            for step, value in enumerate(values):
                rec.log({"loss": value}, step=step)
        calls = [e.key for e in prof.key_averages() if e.count > own.get(e.key, 0)]
        assert not [key for key in calls if key.startswith(("aten::", "cuda"))]
    assert _values(tmp_path) == (list(range(20)), [float(i) for i in range(20)])


@pytest.mark.cuda
@needs_cuda
def test_cuda_tensor_changed_in_place_is_caught(tmp_path, caplog):
    running = torch.ones((), device="cuda")
    with Recorder(tmp_path, rank=0, flush_interval=60) as rec:
        rec.log({"loss": running}, step=0)
        running.add_(41.0)
        rec.flush()
        rec.log({"loss": running}, step=1)
        running.zero_()
    assert _values(tmp_path) == ([1], [42.0])
    assert "train/loss" in caplog.text and "changed in place" in caplog.text
