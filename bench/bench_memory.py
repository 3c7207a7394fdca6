"""Replay memory: peak RSS of the visualizer replaying a 2 GiB segment from disk and a
1 GiB object from S3 (SeaweedFS, started here), beside reading the same file whole.

    python -m bench memory

Each replay runs in a child process of its own, which reports its peak RSS
(``getrusage``): the visualizer's path (a reader paging into ``RunData``), and as
the reference the file read whole, which is what the reader did before it paged.
The segments hold real frames: image snapshots (a 1 MiB PNG each) as a long
run logs them, beside a scalar segment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from snapshot_store.format import batches

MIB = 1 << 20
LOCAL_BYTES = 2 << 30
S3_BYTES = 1 << 30
TARGET_MB = 300
BUCKET = "bench-memory"


def _png(size: int = 512) -> bytes:
    """A real PNG of noise: about 1 MiB that does not compress."""
    import numpy as np

    from snapshot_store.format.images import encode_png

    pixels = np.random.default_rng(0).integers(0, 256, (size, size, 4), dtype=np.uint8)
    return encode_png(pixels)


def write_store(store: Path, image_bytes: int) -> int:
    """A store with ~``image_bytes`` of image frames in one segment; returns that segment's size."""
    from snapshot_store.format import frames as fmt

    store.mkdir(parents=True, exist_ok=True)
    png = _png()
    segment = store / fmt.segment_name(fmt.IMAGES, 0)
    with segment.open("wb") as out:
        step = 0
        while out.tell() < image_bytes:
            record = ("samples", f"grid{step % 4}", step, step / 100, 1.7e9 + step, png)
            out.write(batches.encode_image_batch([record]))
            step += 1
    steps = list(range(100_000))
    series = [
        (
            "train",
            "loss",
            steps,
            [s / 1000 for s in steps],
            [1.7e9] * len(steps),
            [0.5] * len(steps),
        )
    ]
    (store / fmt.segment_name(fmt.SCALARS, 0)).write_bytes(batches.encode_scalar_batch(series))
    (store / fmt.META_FILE).write_bytes(fmt.encode_document({"name": "bench"}))
    return segment.stat().st_size


def _child(mode: str, where: str) -> dict:
    """Replay (or read whole) ``where`` in this process; what it found and its peak RSS."""
    from snapshot_store.format import frames as fmt
    from snapshot_store.read.store_reader import PAGE_BYTES, LocalSource, StoreReader
    from visualizer.model.rundata import RunData
    from visualizer.sources.s3 import S3Location, S3Source

    found = 0
    if mode == "replay":
        source = S3Source(where) if where.startswith("s3://") else LocalSource(where)
        reader, data = StoreReader(source), RunData("bench")
        while True:  # the follower's replay: a page at a time into compact series
            update = reader.poll(max_bytes=PAGE_BYTES)
            found += len(update.images)
            data.apply(update)
            if not reader.more:
                break
        assert not reader.warnings, reader.warnings
    elif where.startswith("s3://"):
        loc = S3Location.parse(where)
        key = loc.key(fmt.segment_name(fmt.IMAGES, 0))
        found = len(S3Source(loc).client.get_object(Bucket=loc.bucket, Key=key)["Body"].read())
    else:
        found = len((Path(where) / fmt.segment_name(fmt.IMAGES, 0)).read_bytes())
    # VmHWM is this process image's own peak; ru_maxrss keeps the parent's across fork+exec.
    status = Path("/proc/self/status").read_text()
    peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
    return {"found": found, "peak_mb": peak_kb / 1024}


def measure(mode: str, where: str, env: dict[str, str] | None = None) -> dict:
    """Run one replay in a child process (environment ``env``, default ours); its report."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_memory", mode, where],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(label: str, size: int, ours: dict, whole: dict) -> dict:
    return {
        "benchmark": f"replay peak RSS, {label} ({size / MIB:,.0f} MiB, {ours['found']:,} images)",
        "ours": f"{ours['peak_mb']:.0f} MB",
        "reference": f"read whole {whole['peak_mb']:,.0f} MB",
        "ratio": f"{whole['peak_mb'] / ours['peak_mb']:.1f}x less",
        "target": f"<= {TARGET_MB} MB",
        "met": ours["peak_mb"] <= TARGET_MB,
    }


def _local_row(root: Path) -> dict:
    store = root / "local" / "pickle"
    size = write_store(store, LOCAL_BYTES)
    ours, whole = measure("replay", str(store)), measure("whole", str(store))
    return _row("local segment", size, ours, whole)


def _s3_row(root: Path) -> dict:
    from tests.fixtures.servers.seaweed import CONFLICTING_ENV, SeaweedS3

    store = root / "s3" / "pickle"
    size = write_store(store, S3_BYTES)
    with SeaweedS3(root / "seaweedfs") as server:
        client = server.client()
        client.create_bucket(Bucket=BUCKET)
        for path in store.iterdir():
            client.upload_file(str(path), BUCKET, f"run/pickle/{path.name}")
        for path in store.iterdir():
            path.unlink()  # what is read comes from S3 only
        env = {k: v for k, v in os.environ.items() if k not in CONFLICTING_ENV} | server.env()
        url = f"s3://{BUCKET}/run/pickle/"
        ours, whole = measure("replay", url, env), measure("whole", url, env)
    return _row("S3 object", size, ours, whole)


def run() -> list[dict]:
    """Rows: peak RSS replaying a 2 GiB local segment and a 1 GiB S3 object, beside reading whole."""
    with tempfile.TemporaryDirectory() as tmp:
        rows = [_local_row(Path(tmp))]
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(_s3_row(Path(tmp)))
    return rows


if __name__ == "__main__":
    if len(sys.argv) == 3:  # a child of measure()
        print(json.dumps(_child(sys.argv[1], sys.argv[2])))
    else:
        from bench.__main__ import print_table

        print_table(run())
