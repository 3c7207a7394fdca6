"""Logged tensors: a CPU tensor's number read at once, others turned into floats in batches.

:meth:`~snapshot_store.write.recorder.Recorder.log` reads a one-element CPU tensor's
value on the spot (:func:`held`): one cheap read, cheaper than keeping it. Any
other tensor (CUDA) is kept by reference with its version counter (no kernel, no
sync) as a :class:`Pending`, and the writer thread calls :func:`to_floats` once per
flush, which copies the pending values of each dtype with one stack and one
device-to-host copy (values of mixed devices or shapes: one per device and
shape). On CUDA that copy runs on a side stream ordered after the logging
thread's stream by an event, and only the writer thread waits for it.

This module never imports torch: a tensor only exists once torch is loaded, so
the torch module is taken from :data:`sys.modules` when there are values to convert.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

CHANGED_IN_PLACE = "was changed in place after log()"


class Pending:
    """A logged tensor (detached, not copied) and its version counter at ``log()`` time."""

    __slots__ = ("problem", "tensor", "value", "version")

    def __init__(self, tensor: Any, version: int) -> None:
        self.tensor, self.version = tensor, version
        self.value: float | None = None  # set by to_floats
        self.problem: str | None = None  # why it was not converted, set by to_floats


TENSOR_TYPES: set[type] = set()  # types seen to be tensors: one set lookup per log() after


def is_tensor(value: Any) -> bool:
    """Duck typing, as ``snapshot_store`` does not import torch."""
    kind = type(value)
    if kind in TENSOR_TYPES:
        return True
    if hasattr(value, "_version") and hasattr(value, "detach") and hasattr(value, "is_cpu"):
        TENSOR_TYPES.add(kind)
        return True
    return False


def held(value: Any, copy: bool) -> Any:
    """What ``log()`` keeps of a tensor: the number of a one-element CPU tensor, else a Pending.

    ``copy``: the tensor's name was changed in place after an earlier ``log()``, so
    its value is copied now (one device copy). A CPU tensor that is not one real
    number is kept as Pending too: the writer thread drops it with its warning.
    """
    if value.is_cpu:
        try:
            number = value.item()
        except (RuntimeError, ValueError):  # several elements
            number = None
        if type(number) is float:
            return number
        if number is not None and type(number) is not complex:  # int, bool
            return float(number)
    if copy:
        value = value.detach().clone()
    elif value.requires_grad:
        value = value.detach()  # a view (no kernel) sharing the version counter
    return Pending(value, value._version)


def queued_value(value: Any, copied: set[tuple[str, str]], group: str, name: str) -> Any:
    """What the recorder's queue keeps of a logged value that is not a float: a tensor's
    :func:`held` (copied when ``(group, name)`` is in ``copied``); other numbers and bad
    input as they are, for the writer thread to convert or drop."""
    if type(value) in TENSOR_TYPES or is_tensor(value):
        return held(value, bool(copied) and (group, name) in copied)
    return value


class DeviceCopyError(RuntimeError):
    """The batched copy of one device's pending values failed; names the values involved."""

    def __init__(self, device: Any, tags: list[str], cause: BaseException) -> None:
        self.tags = tags
        self.__cause__ = cause  # raised later, on the writer thread, still chained
        super().__init__(
            f"copying the logged values {', '.join(tags)} from {device} failed: "
            f"{type(cause).__name__}: {cause}; these values are not recorded, "
            "the ones logged before them are"
        )


def to_floats(pending: Sequence[tuple[str, Pending]]) -> list[DeviceCopyError]:
    """Set ``value`` (or ``problem``) of every ``(tag, Pending)``: one copy per dtype, usually.

    Returns the failed copies; the other values are converted all the same. The
    work per value is kept to two attribute reads: this runs on the writer
    thread, and its bytecodes are GIL time a launch-bound training loop waits for.
    """
    failures = []
    for items in _grouped(pending, lambda tensor: tensor.dtype):
        failures += _convert(items, regroup=True)
    return failures


Items = list[tuple[str, Pending]]


def _grouped(items: Sequence[tuple[str, Pending]], key: Callable[[Any], Any]) -> list[Items]:
    groups: dict[Any, Items] = {}
    for tag, item in items:
        k = key(item.tensor)
        group = groups.get(k)
        if group is None:
            group = groups[k] = []
        group.append((tag, item))
    return list(groups.values())


def _convert(items: Items, regroup: bool) -> list[DeviceCopyError]:
    """Convert tensors of one dtype with one copy; ``regroup``: by device and shape if that fails."""
    first = items[0][1].tensor
    if first.dtype.is_complex:
        return _give_up(items, "is complex")
    try:
        values = _copy_to_host(first.device, [item.tensor for _, item in items])
    except RuntimeError as err:
        if regroup:  # mixed devices or shapes, most likely: one copy for each
            failures = []
            for group in _grouped(items, lambda tensor: (tensor.device, tensor.shape)):
                failures += _convert(group, regroup=False)
            return failures
        # a CUDA error, or a device that can not be read
        _give_up(items, "could not be copied from its device")
        return [DeviceCopyError(first.device, sorted({tag for tag, _ in items}), err)]
    if len(values) != len(items):  # one stack: every tensor has the same shape
        return _give_up(items, f"has {len(values) // len(items)} elements, not 1")
    floating = first.dtype.is_floating_point  # tolist() gave floats already
    for (_, item), value in zip(items, values, strict=True):
        # Read after the copy is complete: an in-place change dispatched before the
        # copy could have been ordered ahead of it has bumped the counter by now.
        if item.tensor._version != item.version:
            item.problem = CHANGED_IN_PLACE
        else:
            item.value = value if floating else float(value)
    return []


def _give_up(items: Items, problem: str) -> list[DeviceCopyError]:
    for _, item in items:
        item.problem = problem
    return []


def _copy_to_host(device: Any, tensors: list[Any]) -> list[Any]:
    """Python numbers of ``tensors`` (one dtype and shape, all on ``device``), one copy in all."""
    torch = sys.modules["torch"]
    if device.type != "cuda":
        return torch.stack(tensors).reshape(-1).cpu().tolist()
    producer = torch.cuda.current_stream(device)
    side = _side_stream(torch, device)
    ready = torch.cuda.Event()
    ready.record(producer)  # after every kernel queued so far, the producers of these values
    with torch.cuda.stream(side):
        side.wait_event(ready)
        host = torch.stack(tensors).reshape(-1).to("cpu", non_blocking=True)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()  # only this (the writer) thread waits; the references are held until now
    return host.tolist()


_SIDE_STREAMS: dict[Any, Any] = {}


def _side_stream(torch: Any, device: Any) -> Any:
    stream = _SIDE_STREAMS.get(device)
    if stream is None:
        stream = _SIDE_STREAMS[device] = torch.cuda.Stream(device)
    return stream
