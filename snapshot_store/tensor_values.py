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


def is_tensor(value: Any) -> bool:
    """Duck typing, as ``snapshot_store`` does not import torch."""
    return hasattr(value, "_version") and hasattr(value, "detach")


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

    Returns the failed copies; the other groups are converted all the same.
    """
    groups: dict[tuple[Any, Any], list[tuple[str, Pending]]] = {}
    for tag, item in pending:
        tensor = item.tensor
        if tensor.is_complex():
            item.problem = "is complex"
        elif tensor.numel() != 1:
            item.problem = f"has {tensor.numel()} elements, not 1"
        else:
            groups.setdefault((tensor.device, tensor.dtype), []).append((tag, item))
    failures = []
    for (device, _), items in groups.items():
        try:
            values = _copy_to_host(device, [item.tensor for _, item in items])
        except RuntimeError as err:  # a CUDA error, or a device that can not be read
            failures.append(DeviceCopyError(device, sorted({tag for tag, _ in items}), err))
            for _, item in items:
                item.problem = "could not be copied from its device"
            continue
        for (_, item), value in zip(items, values, strict=True):
            # Read after the copy is complete: an in-place change dispatched before the
            # copy could have been ordered ahead of it has bumped the counter by now.
            if item.tensor._version != item.version:
                item.problem = CHANGED_IN_PLACE
            else:
                item.value = float(value)
    return failures


def _copy_to_host(device: Any, tensors: list[Any]) -> list[Any]:
    """Python numbers of one-element ``tensors`` (one device, one dtype), one copy in all."""
    torch = sys.modules["torch"]
    if device.type != "cuda":
        return torch.stack(_scalars(tensors)).cpu().tolist()
    producer = torch.cuda.current_stream(device)
    side = _side_stream(torch, device)
    ready = torch.cuda.Event()
    ready.record(producer)  # after every kernel queued so far, the producers of these values
    with torch.cuda.stream(side):
        side.wait_event(ready)
        host = torch.stack(_scalars(tensors)).to("cpu", non_blocking=True)
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


def _scalars(tensors: list[Any]) -> list[Any]:
    """0-dim views (a shape-(1,) value becomes a scalar), so one stack makes a vector."""
    return [t if t.dim() == 0 else t.reshape(()) for t in tensors]
