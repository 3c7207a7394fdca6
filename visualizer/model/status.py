"""The status panel: state, progress, ETA, and whether the run has gone silent."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from visualizer import markup
from visualizer.markup import Html

# A heartbeat this many intervals late means the trainer is gone (killed, hung,
# or its host down) even though its last status still says "running".
STALE_AFTER_HEARTBEATS = 3.0
DEFAULT_HEARTBEAT = 5.0
RATE_WINDOW_SECONDS = 120.0
# A running run's panel shows ages ("7s ago") and is redrawn every second; an ended run's shows
# clock times, which do not age, and is redrawn rarely: a hundred ended runs cost little, and
# a panel sent to a restarted server before its probe would make that env anew unseen.
REFRESH_RUNNING = 1.0
REFRESH_IDLE = 30.0
_NAME_CELL = " style='padding-right:1em;color:#555'"


def is_stale(status: dict[str, Any], now: float | None = None) -> bool:
    """True when a running run's heartbeat is more than ~3 intervals old."""
    if status.get("state") != "running":
        return False
    updated = _number(status.get("updated"))
    if updated is None:
        return False
    heartbeat = _number(status.get("heartbeat_seconds"))
    if heartbeat is None or heartbeat <= 0:  # a nonsensical interval: judge by the default one
        heartbeat = DEFAULT_HEARTBEAT
    now = time.time() if now is None else now
    return now - updated > STALE_AFTER_HEARTBEATS * heartbeat


def last_activity(status: dict[str, Any]) -> float | None:
    """When the run last logged a value (its start before the first one), as the panel shows it.

    Not the heartbeat: the writer thread beats on while a training loop hangs.
    """
    return _number(status.get("last_log_time")) or _number(status.get("start_time"))


def refresh_after(status: dict[str, Any] | None) -> float:
    """Seconds until the panel of a run with ``status`` should be redrawn for its ages."""
    return REFRESH_RUNNING if (status or {}).get("state") == "running" else REFRESH_IDLE


class EtaEstimator:
    """Steps per second over the recent status updates, and the time left at that rate."""

    def __init__(self, window_seconds: float = RATE_WINDOW_SECONDS) -> None:
        self.window_seconds = window_seconds
        self._samples: deque[tuple[float, int]] = deque()

    def observe(self, status: dict[str, Any]) -> None:
        """Record the ``(updated, step)`` of a status document."""
        updated, step = _number(status.get("updated")), _step(status.get("step"))
        if updated is None or step is None:
            return
        if self._samples and (step < self._samples[-1][1] or updated < self._samples[-1][0]):
            self._samples.clear()  # a resumed run went back: the old rate means nothing
        self._samples.append((updated, step))
        while len(self._samples) > 2 and updated - self._samples[0][0] > self.window_seconds:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Steps per second, or None before two distinct samples exist."""
        if len(self._samples) < 2:
            return None
        (t0, s0), (t1, s1) = self._samples[0], self._samples[-1]
        if t1 <= t0 or s1 <= s0:
            return None
        return (s1 - s0) / (t1 - t0)

    def eta_seconds(self, status: dict[str, Any]) -> float | None:
        """Seconds until ``total_steps`` at the recent rate; None if unknown."""
        total, step = _number(status.get("total_steps")), _step(status.get("step"))
        rate = self.rate() or _overall_rate(status)
        if total is None or step is None or not rate:
            return None
        return max(0.0, (total - step) / rate)


@dataclass
class StatusView:
    """What the panel shows; built from the status and meta documents."""

    state: str
    stale: bool
    rows: list[tuple[str, str]]

    def html(self) -> Html:
        """The panel as an HTML table (visdom text windows render HTML)."""
        color = {
            "running": "#1a7f37",
            "finished": "#0550ae",
            "stopped": "#9a6700",  # asked to stop (Ctrl-C, SIGTERM): neither done nor broken
            "failed": "#cf222e",
        }.get(self.state, "#555")
        badge = self.state.upper()
        if self.stale:
            badge, color = "STALE (no heartbeat)", "#bc4c00"
        cells = (
            markup.element("tr", markup.element("td", k, attrs=_NAME_CELL), markup.element("td", v))
            for k, v in self.rows
        )
        return markup.element(
            "div",
            markup.element("b", badge, attrs=f" style='color:{color}'"),
            markup.element("table", *cells, attrs=" style='margin-top:4px'"),
            attrs=" style='font-family:sans-serif'",
        )


def status_view(
    status: dict[str, Any] | None,
    meta: dict[str, Any] | None,
    eta: EtaEstimator | None = None,
    now: float | None = None,
) -> StatusView:
    """Assemble the panel's rows: state, epoch, step, world size, host, ETA, ages.

    The documents come from another program (and maybe another version of it):
    a field of the wrong type, NaN or infinite shows as ``-`` instead of failing.
    """
    status, meta = status or {}, meta or {}
    now = time.time() if now is None else now
    state = status.get("state", "waiting for status")
    state = state if isinstance(state, str) else "unknown"
    rows: list[tuple[str, str]] = []
    step, total = _step(status.get("step")), _number(status.get("total_steps"))
    step_text = "-" if step is None else str(step)
    if total is not None:
        step_text += f" / {int(total)}"
    rows.append(("step", step_text))
    epoch = _number(status.get("epoch"))
    # 0 is also what a writer says when no epoch was ever given (SummaryWriter, W&B-style).
    rows.append(("epoch", f"{epoch:.2f}" if epoch else "-"))
    world_size = _step(meta.get("world_size", status.get("world_size")))
    rows.append(("world size", "-" if world_size is None else str(world_size)))
    host = status.get("host")
    hosts = meta.get("hosts")
    if not (isinstance(host, str) and host):
        host = ", ".join(map(str, hosts)) if isinstance(hosts, list) else ""
    rows.append(("host", host or "-"))
    remaining = eta.eta_seconds(status) if eta and state == "running" else None
    remaining = remaining if remaining is not None and math.isfinite(remaining) else None
    rows.append(("ETA", "-" if remaining is None else format_duration(remaining)))
    ages = state == "running"
    rows.append(("last value logged", _when(_number(status.get("last_log_time")), now, ages)))
    rows.append(("last heartbeat", _when(_number(status.get("updated")), now, ages)))
    rows.extend(_losses(status))
    return StatusView(state=state, stale=is_stale(status, now), rows=rows)


def _losses(status: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for what the trainer could not write (a full disk); none when nothing was lost."""
    rows = []
    unwritten = status.get("unwritten_records")
    if isinstance(unwritten, dict):
        counts = {str(k): n for k, v in unwritten.items() if (n := _step(v))}
        if counts:
            text = ", ".join(f"{n} {stream}" for stream, n in sorted(counts.items()))
            rows.append(("not written (disk full)", text))
    skipped = _step(status.get("checkpoints_skipped"))
    if skipped:
        rows.append(("checkpoints skipped (disk full)", str(skipped)))
    return rows


def _when(moment: float | None, now: float, age: bool) -> str:
    """``12s ago`` (``age``: a running run's panel, redrawn every second), else the clock time."""
    if moment is None:
        return "-"
    if age:
        return f"{format_duration(now - moment)} ago"
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(moment))
    except (OverflowError, OSError, ValueError):  # a time no calendar holds
        return "-"


def format_duration(seconds: float) -> str:
    """``3h 04m``, ``4m 05s`` or ``12s``."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def _overall_rate(status: dict[str, Any]) -> float | None:
    """Steps per second since the run started: the fallback before two status samples exist."""
    updated, started, step = (
        _number(status.get("updated")),
        _number(status.get("start_time")),
        _step(status.get("step")),
    )
    if updated is None or started is None or step is None or step <= 0 or updated <= started:
        return None
    return step / (updated - started)


def _number(value: Any) -> float | None:
    """``value`` as a finite float; None for anything else (NaN, inf, str, list, bool, None)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _step(value: Any) -> int | None:
    """``value`` as a whole number (a step, a count); None for anything else."""
    number = _number(value)
    return int(number) if number is not None and number == int(number) else None
