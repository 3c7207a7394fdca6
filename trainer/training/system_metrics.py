"""GPU and host metrics of rank 0, recorded in the run's ``system`` group off the training thread.

Every ``--system-metrics-interval`` seconds a sampler thread records:

* ``gpu_util_percent``, ``gpu_used_gib`` (the whole GPU, every process): through
  NVML, when ``pynvml`` (the ``nvidia-ml-py`` package) is importable;
* ``gpu_allocated_gib``, ``gpu_reserved_gib``, ``gpu_peak_gib``: this process's
  tensors, its caching allocator and the peak of the former (CUDA only);
* ``cpu_percent`` (the whole host) and ``rss_gib`` (this process's resident memory);
* ``loader_wait_share``: the share of the interval's step time the loop spent
  waiting for the next batch (0: the data loader keeps up; near 1: it is the bottleneck).

The loop's only cost is :class:`StepTimer`: two ``time.perf_counter()`` reads per step.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import psutil
import torch

from snapshot_store import Recorder

log = logging.getLogger(__name__)

SYSTEM_GROUP = "system"
GIB = float(1 << 30)
_clock = time.perf_counter


class StepTimer:
    """Time the loop spends waiting for batches, out of its step time (totals since start)."""

    __slots__ = ("_arrived", "_done", "step", "stepping", "waiting")

    def __init__(self) -> None:
        self.waiting = self.stepping = 0.0
        self.step = 0
        self._arrived = self._done = _clock()

    def start(self, step: int) -> None:
        """An epoch's loop starts at global ``step`` (time in between is not step time)."""
        self.step = step
        self._arrived = self._done = _clock()

    def arrived(self) -> None:
        """The next batch is here: the wait since :meth:`done` ends, a step begins."""
        now = _clock()
        self.waiting += now - self._done
        self.stepping += now - self._arrived
        self._arrived = now
        self.step += 1

    def done(self) -> None:
        """The step's work is done; waiting for the next batch starts."""
        self._done = _clock()


class SystemMetrics:
    """The sampler thread: :meth:`start` it with the run, :meth:`stop` it before the recorder."""

    def __init__(
        self, recorder: Recorder, interval: float, timer: StepTimer, device: torch.device
    ) -> None:
        self.recorder, self.interval, self.timer = recorder, interval, timer
        self.cuda = device if device.type == "cuda" else None
        self._process = psutil.Process()
        self._nvml = _nvml_handle(self.cuda)
        self._last = (timer.waiting, timer.stepping)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="system-metrics", daemon=True)

    def start(self) -> SystemMetrics:
        """Start sampling every ``interval`` seconds; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread (no sample is taken after this returns)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        # psutil keeps the reference point per thread: this thread's first call only sets it
        # (read as a sample, it recorded a fake 0% the smoothed curve climbed from).
        psutil.cpu_percent(None)
        while not self._stopped.wait(self.interval):
            try:
                values = self.sample()
            except Exception as err:  # metrics are a convenience: training goes on
                log.warning("system metrics stopped: %s: %s", type(err).__name__, err)
                return
            if values:
                self.recorder.log(values, step=self.timer.step, group=SYSTEM_GROUP)

    def sample(self) -> dict[str, float]:
        """One set of values (called on the sampler thread)."""
        values = {
            "cpu_percent": psutil.cpu_percent(None),
            "rss_gib": self._process.memory_info().rss / GIB,
        }
        waiting, stepping = self.timer.waiting, self.timer.stepping
        last_waiting, last_stepping = self._last
        self._last = (waiting, stepping)
        if stepping > last_stepping:  # no step in the interval: no share to tell
            values["loader_wait_share"] = (waiting - last_waiting) / (stepping - last_stepping)
        if self.cuda is not None:
            values.update(
                gpu_allocated_gib=torch.cuda.memory_allocated(self.cuda) / GIB,
                gpu_reserved_gib=torch.cuda.memory_reserved(self.cuda) / GIB,
                gpu_peak_gib=torch.cuda.max_memory_allocated(self.cuda) / GIB,
            )
        if self._nvml is not None:
            import pynvml

            values["gpu_util_percent"] = float(pynvml.nvmlDeviceGetUtilizationRates(self._nvml).gpu)
            values["gpu_used_gib"] = pynvml.nvmlDeviceGetMemoryInfo(self._nvml).used / GIB
        return values


def _nvml_handle(device: torch.device | None) -> Any:
    """NVML's handle of ``device``, or None without a GPU or without ``pynvml``."""
    if device is None:
        return None
    try:
        import pynvml
    except ImportError:
        log.info("GPU utilisation is not recorded: pip install nvidia-ml-py to add it")
        return None
    try:
        pynvml.nvmlInit()
        index = torch.cuda.current_device() if device.index is None else device.index
        # NVML counts every GPU of the host; CUDA_VISIBLE_DEVICES renumbers torch's.
        uuid = torch.cuda.get_device_properties(index).uuid
        return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
    except Exception as err:  # pynvml.NVMLError: a driver without NVML, a container
        log.info("GPU utilisation is not recorded: NVML unavailable (%s)", err)
        return None
