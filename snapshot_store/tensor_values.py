"""Logged tensors: kept by reference on the training thread, turned into floats in batches.

:meth:`~snapshot_store.recorder.Recorder.log` wraps a tensor in a :class:`Pending`
(a reference and the tensor's version counter, no kernel, no sync); the writer
thread calls :func:`to_floats` once per flush, which copies every pending value of
a device with one stack and one device-to-host copy. On CUDA that copy runs on a
side stream ordered after the logging thread's stream by an event, and only the
writer thread waits for it.

This module never imports torch: a tensor only exists once torch is loaded, so
the torch module is taken from :data:`sys.modules` when there are values to convert.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

CHANGED_IN_PLACE = "was changed in place after log()"


class Pending:
    """A logged tensor (detached, not copied) and its version counter at ``log()`` time."""

    __slots__ = ("problem", "tensor", "value", "version")

    def __init__(self, tensor: Any) -> None:
        # detach() is a view sharing the version counter: an in-place change of the
        # original still shows, and the autograd graph behind a loss is not kept alive.
        self.tensor = tensor.detach() if tensor.requires_grad else tensor
        self.version: int = tensor._version
        self.value: float | None = None  # set by to_floats
        self.problem: str | None = None  # why it was not converted, set by to_floats


TENSOR_TYPES: set[type] = set()  # types seen to be tensors: one set lookup per log() after


def is_tensor(value: Any) -> bool:
    """Duck typing, as ``snapshot_store`` does not import torch."""
    kind = type(value)
    if kind in TENSOR_TYPES:
        return True
    if hasattr(value, "_version") and hasattr(value, "detach"):
        TENSOR_TYPES.add(kind)
        return True
    return False


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
    """Set ``value`` (or ``problem``) of every ``(tag, Pending)``; one copy per device and dtype.

    Returns the failed copies; the other groups are converted all the same. The
    work per value is a few attribute reads: this runs on the writer thread, and
    every bytecode here is GIL time a launch-bound training thread waits for.
    """
    groups: dict[tuple[Any, Any, Any], list[tuple[str, Pending]]] = {}
    for tag, item in pending:
        tensor = item.tensor
        key = (tensor.device, tensor.dtype, tensor.shape)
        group = groups.get(key)
        if group is None:
            group = groups[key] = []
        group.append((tag, item))
    failures = []
    for (device, dtype, shape), items in groups.items():
        problem = _problem(dtype, shape)
        if problem is None:
            try:
                values = _copy_to_host(device, [item.tensor for _, item in items])
            except RuntimeError as err:  # a CUDA error, or a device that can not be read
                failures.append(DeviceCopyError(device, sorted({tag for tag, _ in items}), err))
                problem = "could not be copied from its device"
        if problem is not None:
            for _, item in items:
                item.problem = problem
            continue
        for (_, item), value in zip(items, values, strict=True):
            # Read after the copy is complete: an in-place change dispatched before the
            # copy could have been ordered ahead of it has bumped the counter by now.
            if item.tensor._version != item.version:
                item.problem = CHANGED_IN_PLACE
            else:
                item.value = float(value)
    return failures


def _problem(dtype: Any, shape: Any) -> str | None:
    """Why tensors of ``dtype`` and ``shape`` are not one number, or None."""
    if dtype.is_complex:
        return "is complex"
    elements = math.prod(shape)
    return None if elements == 1 else f"has {elements} elements, not 1"


def _copy_to_host(device: Any, tensors: list[Any]) -> list[Any]:
    """Python numbers of one-element ``tensors`` (one device, dtype and shape), one copy in all."""
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
