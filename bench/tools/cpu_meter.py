"""CPU seconds of a process, of a server and of the rest of the machine, from /proc."""

from __future__ import annotations

import os
import time
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy() -> float:
    """CPU seconds all cores spent busy so far (from /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values[:8]) - idle) / _TICK


class CpuMeter:
    """CPU seconds of this process, the server, and everything else, over a block."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.available = Path("/proc/stat").exists()

    def __enter__(self) -> CpuMeter:
        if self.available:
            self._start = (
                process_cpu(os.getpid()),
                process_cpu(self.server_pid),
                machine_busy(),
                time.perf_counter(),
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.available:
            return
        ours, server, busy, wall = self._start
        self.ours = process_cpu(os.getpid()) - ours
        self.server = process_cpu(self.server_pid) - server
        self.wall = time.perf_counter() - wall
        self.others = max(0.0, machine_busy() - busy - self.ours - self.server)
