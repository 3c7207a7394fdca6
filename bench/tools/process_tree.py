"""A server a benchmark started, as a user feels it: the memory and CPU of its whole process
tree (the visualizer and its visdom child, say), and the time it takes to exit on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import psutil

MB = 1_000_000


def _tree(pid: int) -> list[psutil.Process]:
    """``pid`` and every process below it, as far as they still run."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and its descendants, summed."""
    total = 0
    for proc in _tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass  # ended between the listing and now: holds nothing
    return total


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) of ``pid`` and its descendants so far."""
    total = 0.0
    for proc in _tree(pid):
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def cpu_share(pid: int, seconds: float) -> float:
    """CPU time of ``pid`` and its descendants over the next ``seconds``, as a share of one core."""
    before = tree_cpu(pid)
    time.sleep(seconds)
    return (tree_cpu(pid) - before) / seconds


class PeakRss:
    """The largest :func:`tree_rss` of ``pid`` seen while the block runs, sampled every
    ``interval`` seconds on a thread (a short peak between samples is missed)."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, tree_rss(self.pid))
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def terminate_tree(proc: subprocess.Popen, cap: float) -> tuple[float | None, list[int]]:
    """SIGTERM ``proc``; seconds until it exits (None past ``cap``, then SIGKILL) and the
    pids of its descendants still running after that, which are then killed."""
    below = _tree(proc.pid)[1:]
    began = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(cap)
        seconds: float | None = time.perf_counter() - began
    except subprocess.TimeoutExpired:
        seconds = None
        proc.kill()
        proc.wait()
    _gone, alive = psutil.wait_procs(below, timeout=2.0)
    for child in alive:  # a child left behind would skew whatever runs next
        child.kill()
    return seconds, [child.pid for child in alive]
