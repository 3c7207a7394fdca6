"""Visualizer: log-to-visible latency, a 1,000,000-point replay beside TensorBoard, idle S3 cost.

    python -m bench visualizer

Every part is real: a visdom server (the project's offline one) on a free port,
a trainer process writing with the Recorder, the visualizer's own command line
in a subprocess for the replay, and SeaweedFS for S3.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from bench.many.idle_s3 import S3_TIME_SCALE, idle_s3_requests
from bench.tools.latency import LATENCY_PREFILL_STEPS, LATENCY_RATE_HZ, measure_latency
from bench.tools.replay import REPLAY_POINTS, replay
from tests.fixtures.servers.net import free_port
from visualizer.server.endpoint import VisdomEndpoint

log = logging.getLogger(__name__)
LATENCY_TARGET = "p50 <= 250 ms, p99 <= 1 s"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _latency_rows(lat: dict) -> list[dict]:
    sent_p50, sent_p99 = _percentile(lat["sent"], 50), _percentile(lat["sent"], 99)
    vis_p50, vis_p99 = _percentile(lat["visible"], 50), _percentile(lat["visible"], 99)
    return [
        {
            "benchmark": f"log -> sent to visdom ({lat['points']} steps x 4 losses at {LATENCY_RATE_HZ} Hz, "
            f"{LATENCY_PREFILL_STEPS:,}-step history)",
            "ours": f"p50 {sent_p50 * 1e3:.0f} ms, p99 {sent_p99 * 1e3:.0f} ms",
            "reference": "",
            "ratio": "",
            "target": LATENCY_TARGET,
            "met": sent_p50 <= 0.25 and sent_p99 <= 1.0,
        },
        {
            "benchmark": "log -> visible in visdom's win_data (polled every 20 ms)",
            "ours": f"p50 {vis_p50 * 1e3:.0f} ms, p99 {vis_p99 * 1e3:.0f} ms",
            "reference": "",
            "ratio": "",
            "target": LATENCY_TARGET,
            "met": vis_p50 <= 0.25 and vis_p99 <= 1.0 and lat["all_visible"],
        },
    ]


def _replay_rows(ours: dict, tb: dict) -> list[dict]:
    return [
        {
            "benchmark": f"replay {REPLAY_POINTS:,} points until fully displayed",
            "ours": f"{ours['wall_seconds']:.2f} s (process start to exit)",
            "reference": f"EventAccumulator load {tb['seconds']:.1f} s ({tb['points'] / tb['seconds']:,.0f} pts/s)",
            "ratio": f"{tb['seconds'] / ours['wall_seconds']:.0f}x faster",
            "target": "<= 3 s",
            "met": ours["rc"] == 0 and ours["fully_displayed"] and ours["wall_seconds"] <= 3.0,
        },
        {
            "benchmark": f"replay {REPLAY_POINTS:,} points: peak memory",
            "ours": f"{ours['maxrss_mb']:.0f} MB",
            "reference": f"EventAccumulator {tb['maxrss_mb']:.0f} MB",
            "ratio": f"{tb['maxrss_mb'] / ours['maxrss_mb']:.1f}x less",
            "target": "<= 300 MB",
            "met": ours["maxrss_mb"] <= 300,
        },
    ]


def _idle_s3_row(s3: dict) -> dict:
    return {
        "benchmark": f"idle S3 run: requests per hour (time scaled 1/{S3_TIME_SCALE})",
        "ours": f"{s3['per_hour']} ({s3['gets']} GETs)",
        "reference": "TensorBoard: a re-read every 5 s, >= 720",
        "ratio": f"{720 / max(1, s3['per_hour']):.0f}x fewer",
        "target": "<= 120",
        "met": s3["per_hour"] <= 120,
    }


def run() -> list[dict]:
    """Rows: latency p50/p99, 1M-point replay time and memory beside TensorBoard, idle S3 requests/hour."""
    from visualizer.server import VisdomServer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        endpoint = VisdomEndpoint(port=free_port())
        with VisdomServer(endpoint, env_path=root / "envs", log_path=root / "visdom.log"):
            rows = _latency_rows(measure_latency(root, endpoint))
            replayed = replay(root, endpoint)
            rows += _replay_rows(replayed["ours"], replayed["tb"])
            rows.append(_idle_s3_row(idle_s3_requests(root, endpoint)))
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
