"""A checkpoint uploaded through the transfer runner while the CLI's training step runs.

The rows that carry the targets send through a shaped link (``bench/tools/link.py``);
the same over plain loopback follow as diagnostics, with the "floor" row: the
step cost of a process that only spins on idle CPU.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.tools.cpu_meter import CpuMeter
from bench.tools.link import PortRateLimit
from bench.tools.s3_env import MB, environ, forget_uploader
from bench.transfer.training_steps import TrainingSteps
from bench.transfer.transfer_rows import conditions_rows, floor_row, training_rows
from tests.fixtures.servers.seaweed import SeaweedS3
from transfer_plugins import s3 as s3_plugin


def _fresh_bucket(client: object, label: str) -> str:
    name = f"{label}-{time.monotonic_ns()}"
    client.create_bucket(Bucket=name)
    return name


def _drop_bucket(client: object, name: str) -> None:
    # SeaweedFS deletes a non-empty bucket with its objects and frees its volumes.
    client.delete_bucket(Bucket=name)


def _upload_during_training(
    steps: TrainingSteps, root: Path, path: Path
) -> tuple[list[float], float]:
    """Step times while the product's runner uploads ``path`` (the spec's hook, a worker
    process for a file this big), and the upload's seconds from submit to sent."""
    from transfer_plugins.runner import TransferRunner

    runner = TransferRunner.from_spec("transfer_plugins.s3.save_to_s3", root)
    started = time.perf_counter()
    runner.submit(path, closed=True)
    times = steps.run_until(lambda: runner.sent >= 1)
    seconds = time.perf_counter() - started
    if runner.close(timeout=60) or runner.sent < 1:
        raise RuntimeError(f"the benchmark upload of {path} did not finish")
    return times, seconds


def _thread_upload_during_training(
    steps: TrainingSteps, client: object, bucket: str, path: Path
) -> tuple[list[float], float]:
    """The same with boto3's ``upload_file`` on a plain thread of the training process:
    what a training script does without this project."""
    finished: dict[str, float] = {}

    def upload() -> None:
        client.upload_file(str(path), bucket, path.name)
        finished["at"] = time.perf_counter()

    started = time.perf_counter()
    thread = threading.Thread(target=upload, daemon=True)
    thread.start()
    times = steps.run_until(lambda: not thread.is_alive())
    thread.join()
    if "at" not in finished:
        raise RuntimeError(f"the benchmark's plain boto3 upload of {path} failed")
    return times, finished["at"] - started


MEASURES = (
    "baseline_ms",
    "during_ms",
    "step_ratio",
    "reference_mbps",
    "ours_mbps",
    "throughput_ratio",
    "client_cpu_per_gb",
    "server_cpu_per_gb",
    "others_cores",
    "thread_step_ratio",
    "thread_mbps",
)


def measure_during_training(
    server: SeaweedS3, steps: TrainingSteps, root: Path, path: Path, repeats: int
) -> dict[str, list[float]]:
    """Per repeat: upload_file alone (nothing else running); then training steps before,
    during our upload and after it; then during a plain-thread upload and after it.
    Each step ratio is against the steps right around it (the machine drifts)."""
    out: dict[str, list[float]] = {key: [] for key in MEASURES}
    for _ in range(repeats):
        _measure_round(server, steps, root, path, out)
    return out


def _measure_round(
    server: SeaweedS3, steps: TrainingSteps, root: Path, path: Path, out: dict[str, list[float]]
) -> None:
    """One repeat of :func:`measure_during_training`, appended to ``out``."""
    size_mb = path.stat().st_size / MB
    pid = server._proc.pid
    client = server.client()
    bucket = _fresh_bucket(client, "reference")
    with CpuMeter(pid) as cpu:
        started = time.perf_counter()
        client.upload_file(str(path), bucket, path.relative_to(root).as_posix())
        reference = time.perf_counter() - started
    _drop_bucket(client, bucket)

    with CpuMeter(pid) as quiet:  # what else this machine is doing
        before = steps.run_for(3.0)
    bucket = _fresh_bucket(client, "ours")
    with environ({**server.env(), s3_plugin.URI_ENV: f"s3://{bucket}/runs"}):
        forget_uploader()  # this process checks the new bucket; the worker builds its own
        during, seconds = _upload_during_training(steps, root, path)
    forget_uploader()
    _drop_bucket(client, bucket)
    after = steps.run_for(3.0)
    baseline = statistics.fmean(before + after)
    out["baseline_ms"].append(baseline * 1e3)
    out["during_ms"].append(statistics.fmean(during) * 1e3)
    out["step_ratio"].append(statistics.fmean(during) / baseline)
    out["reference_mbps"].append(size_mb / reference)
    out["ours_mbps"].append(size_mb / seconds)
    out["throughput_ratio"].append(reference / seconds)
    if cpu.available:
        out["client_cpu_per_gb"].append(cpu.ours / size_mb * 1000)
        out["server_cpu_per_gb"].append(cpu.server / size_mb * 1000)
        out["others_cores"].append(quiet.others / quiet.wall)

    bucket = _fresh_bucket(client, "thread")
    during, seconds = _thread_upload_during_training(steps, client, bucket, path)
    _drop_bucket(client, bucket)
    settled = steps.run_for(3.0)
    out["thread_step_ratio"].append(statistics.fmean(during) / statistics.fmean(after + settled))
    out["thread_mbps"].append(size_mb / seconds)


def _idle_spinner_step_ratios(steps: TrainingSteps, repeats: int) -> list[float]:
    """Step time beside a process that spins in the idle CPU class, as transfer workers
    run, doing no I/O: what merely using the spare core costs on this machine."""
    spin = "from transfer_plugins.worker import use_idle_cpu_only\nuse_idle_cpu_only()\nwhile True: pass"
    ratios = []
    for _ in range(repeats):
        before = steps.run_for(3.0)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        spinner = subprocess.Popen([sys.executable, "-c", spin], env=env)
        try:
            during = steps.run_for(5.0)
        finally:
            spinner.kill()
            spinner.wait()
        after = steps.run_for(3.0)
        ratios.append(statistics.fmean(during) / statistics.fmean(before + after))
    return ratios


# 50 MB/s, a remote endpoint's rate. Faster links make the local server itself the
# bottleneck on a small machine: its CPU per GB competes with training's core.
LINK_MBIT = 400


def run_during_training(
    size_mb: int = 1000, repeats: int = 5, diagnostic_repeats: int = 3
) -> list[dict]:
    """Rows: a ``size_mb`` checkpoint uploaded during training, over a remote-like link
    (when the loopback port can be shaped) and over plain loopback; and the step cost
    of a process that only spins on idle CPU (this machine's floor)."""
    import torch

    saved_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same one core for the step in every phase
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, SeaweedS3(Path(tmp) / "seaweedfs") as server:
            steps = TrainingSteps(Path(tmp))
            root = Path(tmp) / "checkpoints"
            path = root / "run" / "latest.pth"
            path.parent.mkdir(parents=True)
            with path.open("wb") as f:
                for _ in range(size_mb // 50):
                    f.write(os.urandom(50 * MB))
                f.write(os.urandom(size_mb % 50 * MB))
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            link = f"S3 over a {LINK_MBIT} Mbit/s link"
            why_not = PortRateLimit.unavailable()
            if why_not is None:
                with PortRateLimit(server.ports["s3.port"], LINK_MBIT):
                    m = measure_during_training(server, steps, root, path, repeats)
                rows += training_rows(m, size_mb, link, targets=True)
            else:
                rows.append(
                    {
                        "benchmark": f"checkpoint upload during training, {link}",
                        "ours": f"skipped: {why_not}",
                        "met": "",
                    }
                )
            rows.append(floor_row(_idle_spinner_step_ratios(steps, diagnostic_repeats)))
            m = measure_during_training(server, steps, root, path, diagnostic_repeats)
            rows += training_rows(
                m, size_mb, "S3 server on this machine's loopback", targets=why_not is not None
            )
            rows += conditions_rows(m, diagnostic_repeats, load)
    finally:
        torch.set_num_threads(saved_threads)
        forget_uploader()
    return rows
