"""A slower link in front of one loopback port, for benchmarks of remote-like servers.

A real S3 endpoint is on another machine: uploads to it are bound by the link, and
its CPU is not the training machine's. A server on 127.0.0.1 is bound only by CPU.
:class:`PortRateLimit` shapes the bytes sent to one port with Linux ``tc`` (an HTB
class and a u32 filter on ``lo``) for the duration of a ``with`` block; every other
loopback port keeps full speed. It needs root and iproute2.
"""

from __future__ import annotations

import os
import shutil
import subprocess

DEVICE = "lo"


class PortRateLimit:
    """Limit TCP/UDP bytes sent to ``port`` on ``lo`` to ``mbit`` megabits per second."""

    def __init__(self, port: int, mbit: int) -> None:
        self.port, self.mbit = port, mbit

    @staticmethod
    def unavailable() -> str | None:
        """Why shaping can not be used here, or None when it can."""
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return "shaping the loopback link needs root"
        if shutil.which("tc") is None:
            return "shaping the loopback link needs tc (iproute2)"
        shown = subprocess.run(
            ["tc", "qdisc", "show", "dev", DEVICE], capture_output=True, text=True
        ).stdout
        if "noqueue" not in shown:
            return f"{DEVICE} already has a queueing discipline ({shown.strip()}): not touched"
        return None

    def __enter__(self) -> PortRateLimit:
        rate = f"{self.mbit}mbit"
        commands = [
            f"qdisc add dev {DEVICE} root handle 1: htb default 10",
            f"class add dev {DEVICE} parent 1: classid 1:10 htb rate 100gbit",  # everything else
            f"class add dev {DEVICE} parent 1: classid 1:20 htb rate {rate} ceil {rate}",
            f"filter add dev {DEVICE} parent 1: protocol ip prio 1 u32 "
            f"match ip dport {self.port} 0xffff flowid 1:20",
        ]
        try:
            for command in commands:
                subprocess.run(["tc", *command.split()], check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as err:
            self._remove()
            raise RuntimeError(f"tc {' '.join(err.cmd[1:])} failed: {err.stderr.strip()}") from err
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._remove()

    @staticmethod
    def _remove() -> None:
        subprocess.run(["tc", "qdisc", "del", "dev", DEVICE, "root"], capture_output=True)
