"""The rows of the checkpoint-during-training benchmark, from its measures."""

from __future__ import annotations

import os
import statistics


def each(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def training_rows(m: dict[str, list[float]], size_mb: int, where: str, targets: bool) -> list[dict]:
    """Step-time and throughput rows; ``targets`` False marks them diagnostic."""
    med = {key: statistics.median(values) for key, values in m.items() if values}
    rows = [
        {
            "benchmark": f"training step during a {size_mb} MB checkpoint upload, {where}",
            "ours": f"{med['during_ms']:.1f} ms/step",
            "reference": f"no upload {med['baseline_ms']:.1f} ms/step",
            "ratio": f"{med['step_ratio']:.2f}x ({each(m['step_ratio'])})",
            "target": "<= 1.05x",
            "met": med["step_ratio"] <= 1.05,
        },
        {
            "benchmark": f"upload throughput of that checkpoint during training, {where}",
            "ours": f"{med['ours_mbps']:,.0f} MB/s",
            "reference": f"upload_file alone {med['reference_mbps']:,.0f} MB/s",
            "ratio": f"{med['throughput_ratio']:.2f}x ({each(m['throughput_ratio'])})",
            "target": ">= 0.8x",
            "met": med["throughput_ratio"] >= 0.8,
        },
    ]
    if not targets:
        for row in rows:
            row["target"], row["met"] = f"(diagnostic) {row['target']}", ""
    rows.append(
        {
            "benchmark": "  without this project: boto3 upload_file on a thread of the training process",
            "ours": f"step {med['thread_step_ratio']:.2f}x ({each(m['thread_step_ratio'])})",
            "reference": f"{med['thread_mbps']:,.0f} MB/s",
            "ratio": f"{med['thread_mbps'] / med['reference_mbps']:.2f}x upload_file alone",
            "target": "(reference)",
            "met": "",
        }
    )
    return rows


def conditions_rows(m: dict[str, list[float]], repeats: int, load: float) -> list[dict]:
    """Diagnostics for the loopback rows: where the CPU went, and the most it leaves."""
    med = {key: statistics.median(values) for key, values in m.items() if values}
    cores = os.cpu_count() or 1
    others = f"; other work {med['others_cores']:.1f} cores" if "others_cores" in med else ""
    rows = [
        {
            "benchmark": f"  conditions: {cores} cores, torch 1 thread, median of {repeats}",
            "ours": f"load {load:.1f}{others}",
            "target": "(diagnostic)",
            "met": "",
        }
    ]
    if "client_cpu_per_gb" in med:
        per_gb = med["client_cpu_per_gb"] + med["server_cpu_per_gb"]
        # Training keeps one core; client and server share what is left.
        ceiling = (cores - 1) / per_gb * 1000
        rows += [
            {
                "benchmark": "  CPU seconds per GB uploaded on loopback (upload_file alone): client, server",
                "ours": f"client {med['client_cpu_per_gb']:.1f} s/GB",
                "reference": f"server {med['server_cpu_per_gb']:.1f} s/GB",
                "ratio": f"{med['server_cpu_per_gb'] / max(med['client_cpu_per_gb'], 1e-9):.1f}x in the server",
                "target": "(diagnostic)",
                "met": "",
            },
            {
                "benchmark": "  loopback ceiling while training keeps its core: spare cores / CPU s per GB",
                "ours": f"{ceiling:,.0f} MB/s",
                "reference": f"upload_file alone {med['reference_mbps']:,.0f} MB/s",
                "ratio": f"{ceiling / med['reference_mbps']:.2f}x at most",
                "target": "(diagnostic)",
                "met": "",
            },
        ]
    return rows


def floor_row(ratios: list[float]) -> dict:
    return {
        "benchmark": "  floor: a process spinning on idle CPU only (no I/O) beside training",
        "ours": f"step {statistics.median(ratios):.2f}x ({each(ratios)})",
        "target": "(diagnostic)",
        "met": "",
    }
