"""Transfer: upload throughput of ``transfer_plugins.s3.save_to_s3`` beside boto3's
``upload_file`` alone, against a SeaweedFS server this benchmark starts itself; and a
1 GB checkpoint uploaded through the transfer runner while the project's training
step runs (issue 5: step time <= 1.05x the baseline, throughput >= 0.8x upload_file).

    python -m bench transfer

The training step is the CLI's: SmallCNN, cross-entropy and Adam on the generated
shapes, batches from a DataLoader, torch pinned to one thread.

A real S3 endpoint is on another machine, behind a link: the checkpoint rows that
carry the targets send to the local server through a 400 Mbit/s link
(``bench/link.py``, needs root and tc), with ``upload_file`` alone over the same
link as the reference. The same rows over plain loopback follow as diagnostics:
there the upload is bound by CPU, most of it the server's (shown per GB), which a
remote endpoint would not take from training; the last row says the most any
uploader could reach there while training keeps its core. Between them, the
"floor" row is the step cost of a process that only spins on idle CPU: what this
machine charges for any work at all on the spare core.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.link import PortRateLimit
from tests.fixtures.seaweed import CONFLICTING_ENV, SeaweedS3
from transfer_plugins import s3 as s3_plugin

BUCKET = "bench"
MB = 1_000_000


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """Set ``values`` (and clear CONFLICTING_ENV) in os.environ for the block."""
    saved = dict(os.environ)
    for name in CONFLICTING_ENV:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _forget_uploader() -> None:
    """Make ``save_to_s3`` build its client and destination again from the environment.

    The plugin builds them once per process, as training needs; the benchmark
    points it at a new bucket per phase.
    """
    s3_plugin._uploader = None


def _median_seconds(action: Callable[[int], object], repeats: int) -> float:
    times = []
    for i in range(repeats):
        started = time.perf_counter()
        action(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(server: SeaweedS3, path: Path, repeats: int) -> dict[str, float]:
    """Median seconds to upload ``path``: boto3 alone, ours, and ours for an unchanged
    file (``resent`` counts the times that one was sent anyway).

    Expects TRANSFER_S3_URI and the server's AWS_* variables in the environment.
    """
    client = server.client()
    _forget_uploader()
    s3_plugin.preflight()  # the client is created once per process, as in training

    def reference(i: int) -> None:
        client.upload_file(str(path), BUCKET, f"reference/{i}/{path.name}")

    def ours(i: int) -> None:
        s3_plugin.save_to_s3(path, f"ours/{i}/{path.name}")

    resent = 0

    def unchanged(_: int) -> None:
        nonlocal resent
        resent += s3_plugin.save_to_s3(path, f"ours/0/{path.name}")

    return {
        "reference": _median_seconds(reference, repeats),
        "ours": _median_seconds(ours, repeats),
        "unchanged": _median_seconds(unchanged, repeats),
        "resent": resent,
    }


def run(
    size_mb: int = 256, repeats: int = 3, training_size_mb: int = 1000, training_repeats: int = 5
) -> list[dict]:
    """Rows: large-file upload throughput, the cost of re-announcing it unchanged, and a
    ``training_size_mb`` checkpoint uploaded during training (0 skips that part)."""
    rows = _throughput_rows(size_mb, repeats)
    if training_size_mb:
        rows += run_during_training(training_size_mb, training_repeats)
    return rows


def _throughput_rows(size_mb: int, repeats: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp, SeaweedS3(Path(tmp) / "seaweedfs") as server:
        server.client().create_bucket(Bucket=BUCKET)
        path = Path(tmp) / "latest.pth"
        path.write_bytes(os.urandom(size_mb * MB))
        with _environ({**server.env(), s3_plugin.URI_ENV: f"s3://{BUCKET}/runs"}):
            seconds = measure(server, path, repeats)
        _forget_uploader()
    ours_rate = size_mb / seconds["ours"]
    reference_rate = size_mb / seconds["reference"]
    return [
        {
            "benchmark": f"S3 upload, {size_mb} MB file (SeaweedFS, loopback)",
            "ours": f"{ours_rate:,.0f} MB/s",
            "reference": f"boto3 upload_file {reference_rate:,.0f} MB/s",
            "ratio": f"{ours_rate / reference_rate:.2f}x",
            "target": ">= 0.9x of upload_file",
            "met": ours_rate >= 0.9 * reference_rate,
        },
        {
            "benchmark": f"S3 re-announce of the unchanged {size_mb} MB file",
            "ours": f"{seconds['unchanged'] * 1e3:.2f} ms (skipped)",
            "reference": f"boto3 upload_file {seconds['reference'] * 1e3:,.0f} ms",
            "ratio": f"{seconds['reference'] / seconds['unchanged']:,.0f}x cheaper",
            "target": "not sent again",
            "met": seconds["resent"] == 0,
        },
    ]


# --- a checkpoint uploaded while training runs ----------------------------------------------


class TrainingSteps:
    """The CLI's training step on one torch thread: next DataLoader batch, forward,
    cross-entropy, backward, Adam (as ``trainer.loop.Runner._run_batch``)."""

    def __init__(self, workdir: Path, batch_size: int = 64, image_size: int = 32) -> None:
        import torch
        from torch import nn
        from torch.utils.data import DataLoader

        from trainer.data import load_datasets, make_dataset
        from trainer.models import SmallCNN

        make_dataset(
            workdir / "shapes",
            classes=4,
            train_per_class=128,
            val_per_class=1,
            image_size=image_size,
            seed=0,
        )
        train = load_datasets(workdir / "shapes")["train"]
        self.loader = DataLoader(
            train,
            batch_size=batch_size,
            shuffle=True,
            drop_last=True,
            generator=torch.Generator().manual_seed(0),
        )
        torch.manual_seed(0)
        self.model = SmallCNN(num_classes=len(train.classes))
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.005)  # the CLI's default
        self._batches: Iterator = iter(())
        self.run_for(2.0)  # warm-up: decode and cache the images, allocator, kernels

    def step(self) -> float:
        """Seconds of one training step, data included."""
        started = time.perf_counter()
        try:
            inputs, targets = next(self._batches)
        except StopIteration:
            self._batches = iter(self.loader)
            inputs, targets = next(self._batches)
        loss = self.criterion(self.model(inputs), targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return time.perf_counter() - started

    def run_for(self, seconds: float) -> list[float]:
        end = time.perf_counter() + seconds
        times = []
        while time.perf_counter() < end:
            times.append(self.step())
        return times

    def run_until(self, done: Callable[[], bool], limit: float = 600.0) -> list[float]:
        end = time.perf_counter() + limit
        times = []
        while not done() and time.perf_counter() < end:
            times.append(self.step())
        return times


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _machine_busy() -> float:
    """CPU seconds all cores spent busy so far (from /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return (sum(values[:8]) - idle) / _TICK


class _CpuMeter:
    """CPU seconds of this process, the server, and everything else, over a block."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.available = Path("/proc/stat").exists()

    def __enter__(self) -> _CpuMeter:
        if self.available:
            self._start = (
                _process_cpu(os.getpid()),
                _process_cpu(self.server_pid),
                _machine_busy(),
                time.perf_counter(),
            )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.available:
            return
        ours, server, busy, wall = self._start
        self.ours = _process_cpu(os.getpid()) - ours
        self.server = _process_cpu(self.server_pid) - server
        self.wall = time.perf_counter() - wall
        self.others = max(0.0, _machine_busy() - busy - self.ours - self.server)


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


def measure_during_training(
    server: SeaweedS3, steps: TrainingSteps, root: Path, path: Path, repeats: int
) -> dict[str, list[float]]:
    """Per repeat: upload_file alone (nothing else running); then training steps before,
    during our upload and after it; then during a plain-thread upload and after it.
    Each step ratio is against the steps right around it (the machine drifts)."""
    size_mb = path.stat().st_size / MB
    relative = path.relative_to(root).as_posix()
    pid = server._proc.pid
    out: dict[str, list[float]] = {
        key: []
        for key in (
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
    }
    client = server.client()
    for _ in range(repeats):
        bucket = _fresh_bucket(client, "reference")
        with _CpuMeter(pid) as cpu:
            started = time.perf_counter()
            client.upload_file(str(path), bucket, relative)
            reference = time.perf_counter() - started
        _drop_bucket(client, bucket)

        with _CpuMeter(pid) as quiet:  # what else this machine is doing
            before = steps.run_for(3.0)
        bucket = _fresh_bucket(client, "ours")
        with _environ({**server.env(), s3_plugin.URI_ENV: f"s3://{bucket}/runs"}):
            _forget_uploader()  # this process checks the new bucket; the worker builds its own
            during, seconds = _upload_during_training(steps, root, path)
        _forget_uploader()
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
        out["thread_step_ratio"].append(
            statistics.fmean(during) / statistics.fmean(after + settled)
        )
        out["thread_mbps"].append(size_mb / seconds)
    return out


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


def _floor_row(ratios: list[float]) -> dict:
    return {
        "benchmark": "  floor: a process spinning on idle CPU only (no I/O) beside training",
        "ours": f"step {statistics.median(ratios):.2f}x ({_each(ratios)})",
        "target": "(diagnostic)",
        "met": "",
    }


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
                rows += _training_rows(m, size_mb, link, targets=True)
            else:
                rows.append(
                    {
                        "benchmark": f"checkpoint upload during training, {link}",
                        "ours": f"skipped: {why_not}",
                        "met": "",
                    }
                )
            rows.append(_floor_row(_idle_spinner_step_ratios(steps, diagnostic_repeats)))
            m = measure_during_training(server, steps, root, path, diagnostic_repeats)
            rows += _training_rows(
                m, size_mb, "S3 server on this machine's loopback", targets=why_not is not None
            )
            rows += _conditions_rows(m, diagnostic_repeats, load)
    finally:
        torch.set_num_threads(saved_threads)
        _forget_uploader()
    return rows


def _each(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _training_rows(
    m: dict[str, list[float]], size_mb: int, where: str, targets: bool
) -> list[dict]:
    """Step-time and throughput rows; ``targets`` False marks them diagnostic."""
    med = {key: statistics.median(values) for key, values in m.items() if values}
    rows = [
        {
            "benchmark": f"training step during a {size_mb} MB checkpoint upload, {where}",
            "ours": f"{med['during_ms']:.1f} ms/step",
            "reference": f"no upload {med['baseline_ms']:.1f} ms/step",
            "ratio": f"{med['step_ratio']:.2f}x ({_each(m['step_ratio'])})",
            "target": "<= 1.05x",
            "met": med["step_ratio"] <= 1.05,
        },
        {
            "benchmark": f"upload throughput of that checkpoint during training, {where}",
            "ours": f"{med['ours_mbps']:,.0f} MB/s",
            "reference": f"upload_file alone {med['reference_mbps']:,.0f} MB/s",
            "ratio": f"{med['throughput_ratio']:.2f}x ({_each(m['throughput_ratio'])})",
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
            "ours": f"step {med['thread_step_ratio']:.2f}x ({_each(m['thread_step_ratio'])})",
            "reference": f"{med['thread_mbps']:,.0f} MB/s",
            "ratio": f"{med['thread_mbps'] / med['reference_mbps']:.2f}x upload_file alone",
            "target": "(reference)",
            "met": "",
        }
    )
    return rows


def _conditions_rows(m: dict[str, list[float]], repeats: int, load: float) -> list[dict]:
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


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(run())
