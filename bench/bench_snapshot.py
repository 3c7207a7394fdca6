"""One file to send: ``python -m visualizer snapshot``'s size, write time and draw times.

    python -m bench snapshot

Two files, each written by the command line (process start to exit) and opened from
``file://`` in a fresh headless Chromium with the network off, three times:

- one run of 3 series x 1,000,000 points (``workloads.many_runs``' curves: a decay and
  noise), its values float32 numbers as a float32 tensor's loss logs them; then the same
  curves in float64, none a float32 number, noise in every bit (zlib, or xz, packs those
  to some 6.3 bytes a point: the floor of the format, base64 making it 8.4);
- the comparison of 100 runs of a 10,000-run sweep (3 series x 1,000 points each),
  grouped by seed, with the runs table of all 10,000.

Times are the page's own marks (``performance.mark``, from the navigation's start):
the first plot drawn, every plot of the first screen drawn (the comparison's with its
parallel coordinates). A zoom to a 1,000-step range is timed from ``Plotly.relayout`` to
the plot holding every stored point of it. Beside each file: the same points as
TensorBoard event files (torch's ``SummaryWriter``: a record a point, sized exactly, its
header measured from a file it wrote) and as ``python -m visualizer export``'s CSV.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from tests.fixtures.servers.visdom import start_chromium
from workloads.many_runs import RunSpec, run_spec, series_names, write_run, write_runs

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT_TIMEOUT_S = 120  # a bound on waiting for the page, not a target
TAGS = tuple(f"{group}/{name}" for group, name in series_names(3))


@dataclass(frozen=True)
class Sizes:
    """How big the runs are and how often each is measured (the smoke test's are tiny)."""

    points: int = 1_000_000
    sweep: int = 10_000
    compared: int = 100
    sweep_points: int = 1_000
    zoom_range: int = 1_000
    rounds: int = 3
    zooms: int = 5


# Waits for the page's mark ``name``; answers every mark, in seconds from navigation.
MARKS_JS = """
const [name, done] = arguments;
const timer = setInterval(() => {
  if (!performance.getEntriesByName(name).length) return;
  clearInterval(timer);
  done(Object.fromEntries(performance.getEntriesByType('mark')
    .map((m) => [m.name.replace('snapshot:', ''), m.startTime / 1000])));
}, 5);
"""
# Zooms the first run's first plot to [from, to] (null: the whole run), then polls its
# first trace until it runs from ``from`` to ``to`` (a neighbour on either side drawn too,
# where the budget leaves room); answers the ms taken and its x values.
ZOOM_JS = """
const [range, from, to, done] = arguments;
const div = document.querySelector('#run-0 .js-plotly-plot');
const begin = performance.now();
Plotly.relayout(div, range ? {'xaxis.range': range} : {'xaxis.autorange': true});
const timer = setInterval(() => {
  const x = div.data && div.data.length && div.data[0].x;
  const last = x && x[x.length - 1];
  if (!x || x[0] < from - 1 || x[0] > from || last < to || last > to + 1) return;
  clearInterval(timer);
  done([performance.now() - begin, Array.from(x)]);
}, 2);
"""


def snapshot(pickle_dir: Path, out: Path, *options: str) -> float:
    """Seconds ``python -m visualizer snapshot`` takes to write ``out``, start to exit."""
    command = [sys.executable, "-m", "visualizer", "snapshot", "--pickle-dir", str(pickle_dir)]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--out", str(out), *options], cwd=ROOT, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"benchmark: the snapshot failed: {done.stderr.strip()}")
    return seconds


def _offline(driver: Any) -> None:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )


def _zooms(driver: Any, sizes: Sizes) -> list[float]:
    """Seconds of each zoom to ``zoom_range`` steps, at a new place each time, until every
    stored point of the range is drawn; zoomed out again between two."""
    out = []
    for i in range(sizes.zooms):
        start = sizes.points // 10 + i * (sizes.points * 3 // (4 * max(sizes.zooms, 1)))
        last = start + sizes.zoom_range - 1
        ms, x = driver.execute_async_script(ZOOM_JS, [start, last], start, last)
        inside = [step for step in x if start <= step <= last]
        if inside != list(range(start, last + 1)) or len(x) > sizes.zoom_range + 2:
            raise RuntimeError(f"benchmark: the zoom drew {len(x)} points, not every stored one")
        out.append(ms / 1000.0)
        driver.execute_async_script(ZOOM_JS, None, 0, sizes.points - 1)
    return out


def opened(page: Path, workdir: Path, sizes: Sizes, zoom: bool) -> dict[str, list[float]]:
    """The page's marks over ``sizes.rounds`` openings, each in a fresh Chromium (and the
    zooms of the last, with ``zoom``)."""
    times: dict[str, list[float]] = {"first-plot": [], "drawn": [], "zoom": []}
    for index in range(sizes.rounds):
        (workdir / f"chromium-{index}").mkdir(parents=True)
        driver = start_chromium(workdir / f"chromium-{index}")
        driver.set_script_timeout(SCRIPT_TIMEOUT_S)
        try:
            _offline(driver)
            driver.get(page.as_uri())
            marks = driver.execute_async_script(MARKS_JS, "snapshot:drawn")
            times["first-plot"].append(marks["first-plot"])
            times["drawn"].append(marks["drawn"])
            if zoom and index == sizes.rounds - 1:
                times["zoom"] = _zooms(driver, sizes)
        finally:
            driver.quit()
    return times


def _varint_classes(steps: np.ndarray) -> list[tuple[int, int]]:
    """(a step, how many steps) for each length a step takes as a protobuf varint (0: none)."""
    edges = [0, 1] + [1 << (7 * k) for k in range(1, 10)]
    out = []
    for low, high in itertools.pairwise(edges):
        inside = steps[(steps >= low) & (steps < high)]
        if len(inside):
            out.append((int(inside[0]), len(inside)))
    return out


def tensorboard_bytes(tags: tuple[str, ...], steps: np.ndarray, workdir: Path) -> int:
    """The size of the event file torch's ``SummaryWriter.add_scalar`` writes for each tag
    at each step: its header as written by it here, then a record a point (8 bytes of
    length, 4 of its checksum, the Event, 4 of the Event's checksum)."""
    from tensorboard.compat.proto.event_pb2 import Event  # type: ignore[import-untyped]
    from tensorboard.compat.proto.summary_pb2 import Summary  # type: ignore[import-untyped]
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(workdir / "tb-header")) as writer:
        writer.flush()
    header = sum(f.stat().st_size for f in (workdir / "tb-header").iterdir())
    total = header
    for tag in tags:
        for step, count in _varint_classes(steps):
            value = Summary.Value(tag=tag, simple_value=1.0)
            event = Event(wall_time=1.7e9, step=step, summary=Summary(value=[value]))
            total += (event.ByteSize() + 16) * count
    return total


def csv_bytes(pickle_dir: Path, out: Path, runs: str = "", kind: str = "scalars") -> int:
    """The size of ``python -m visualizer export``'s CSV of ``runs`` (a regex)."""
    command = [sys.executable, "-m", "visualizer", "export", "--pickle-dir", str(pickle_dir)]
    command += ["--kind", kind, "--output", str(out)] + (["--runs", runs] if runs else [])
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return out.stat().st_size


def page_data(page: Path) -> dict[str, Any]:
    """The data a snapshot file carries (its JSON element)."""
    text = page.read_text(encoding="utf-8")
    start = text.index('id="snapshot-data">') + len('id="snapshot-data">')
    return dict(json.loads(text[start : text.index("</script>", start)]))


def _one_run(root: Path, sizes: Sizes, float32: bool) -> Path:
    """A finished run of 3 series x ``sizes.points`` points; its folder of runs."""
    spec = RunSpec("one", {"lr": 1e-3, "seed": 7}, "finished", sizes.points, sizes.points,
                   series_names(3), 7)  # fmt: skip
    write_run(root / "one" / "pickle", spec, time.time() - 86_400.0, float32=float32)
    return root


def measure_one(workdir: Path, sizes: Sizes, float32: bool) -> dict[str, Any]:
    """Size, write seconds, the page's times and the references of the one run's file."""
    runs = _one_run(workdir / "runs", sizes, float32)
    page = workdir / "one.html"
    written = snapshot(runs, page)
    out: dict[str, Any] = {"size": page.stat().st_size, "written": written}
    out |= opened(page, workdir, sizes, zoom=float32)
    if float32:  # the same points either way: the references once
        steps = np.arange(sizes.points, dtype=np.int64)
        out["tensorboard"] = tensorboard_bytes(TAGS, steps, workdir)
        out["csv"] = csv_bytes(runs, workdir / "one.csv")
    return out


def measure_sweep(workdir: Path, sizes: Sizes) -> dict[str, Any]:
    """The comparison of ``sizes.compared`` runs of a ``sizes.sweep``-run sweep, grouped."""
    runs = workdir / "sweep"
    write_runs(runs, sizes.sweep, points=sizes.sweep_points)
    page = workdir / "sweep.html"
    written = snapshot(runs, page, "--compare", str(sizes.compared), "--group-by", "seed")
    out: dict[str, Any] = {"size": page.stat().st_size, "written": written}
    out |= opened(page, workdir, sizes, zoom=False)
    names = [run["name"] for run in page_data(page)["runs"]]
    out["compared"] = len(names)
    tb = 0
    for name in names:
        spec = run_spec(int(name.rsplit("-", 1)[1]), 3, sizes.sweep_points)
        tb += tensorboard_bytes(TAGS, np.arange(spec.steps, dtype=np.int64), workdir)
    out["tensorboard"] = tb
    chosen = "^(" + "|".join(re.escape(name) for name in names) + ")$"
    out["csv"] = csv_bytes(runs, workdir / "points.csv", chosen)
    out["csv"] += csv_bytes(runs, workdir / "table.csv", kind="runs")
    return out


def _mb(size: float) -> str:
    return f"{size / 1e6:.1f} MB"


def _spread(values: list[float]) -> str:
    return f"{median(values):.2f} s, slowest {max(values):.2f} s"


def rows(one: dict, noise: dict, sweep: dict, sizes: Sizes) -> list[dict]:
    """The table: a row a measure, the references beside the sizes."""
    run = f"one run of 3 series x {sizes.points:,} points"
    fresh = f"median of {sizes.rounds} fresh Chromiums"
    many = f"the comparison of {sweep['compared']} of {sizes.sweep:,} runs, grouped, table of all"
    return [
        {"benchmark": f"{run} (float32 values, as a float32 loss logs them): file size",
         "ours": _mb(one["size"]),
         "reference": f"TensorBoard event files {_mb(one['tensorboard'])}; CSV (export) "
                      f"{_mb(one['csv'])}",
         "ratio": f"{one['size'] / one['tensorboard']:.2f}x TensorBoard's",
         "target": "<= 20 MB", "met": one["size"] <= 20e6},
        {"benchmark": f"{run}: written (the snapshot command, start to exit)",
         "ours": f"{one['written']:.2f} s", "target": "<= 5 s", "met": one["written"] <= 5},
        {"benchmark": f"{run}: first plot drawn from file://, offline ({fresh})",
         "ours": _spread(one["first-plot"]), "reference": f"every plot {_spread(one['drawn'])}",
         "target": "<= 2 s", "met": median(one["first-plot"]) <= 2},
        {"benchmark": f"{run}: zoom to a {sizes.zoom_range:,}-step range, every stored point "
                      f"drawn (median of {len(one['zoom'])})",
         "ours": _spread(one["zoom"]), "target": "<= 0.5 s", "met": median(one["zoom"]) <= 0.5},
        {"benchmark": f"{run}, float64 values (the same curves, none a float32 number: noise "
                      "in every bit, the format's floor): size, written, first plot",
         "ours": f"{_mb(noise['size'])}, {noise['written']:.2f} s, "
                 f"{_spread(noise['first-plot'])}",
         "reference": f"TensorBoard {_mb(one['tensorboard'])} (float32 either way)",
         "target": "<= 20 MB, <= 5 s, <= 2 s",
         "met": noise["size"] <= 20e6 and noise["written"] <= 5
                and median(noise["first-plot"]) <= 2},
        {"benchmark": f"{many}: file size", "ours": _mb(sweep["size"]),
         "reference": f"TensorBoard event files of the compared runs {_mb(sweep['tensorboard'])}; "
                      f"CSV (their points and the runs table) {_mb(sweep['csv'])}",
         "ratio": f"{sweep['size'] / sweep['tensorboard']:.2f}x TensorBoard's",
         "target": "<= 15 MB", "met": sweep["size"] <= 15e6},
        {"benchmark": f"{many}: written", "ours": f"{sweep['written']:.2f} s",
         "target": "<= 5 s", "met": sweep["written"] <= 5},
        {"benchmark": f"{many}: drawn from file:// (the comparison and its parallel "
                      f"coordinates; {fresh})",
         "ours": _spread(sweep["drawn"]), "reference": f"first plot {_spread(sweep['first-plot'])}",
         "target": "<= 3 s", "met": median(sweep["drawn"]) <= 3},
    ]  # fmt: skip


def run(sizes: Sizes | None = None) -> list[dict]:
    """The suite's rows (``sizes``: the issue's, unless a test asks for smaller)."""
    sizes = sizes or Sizes()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = measure_one(root / "float32", sizes, float32=True)
        noise = measure_one(root / "float64", sizes, float32=False)
        sweep = measure_sweep(root / "sweep", sizes)
    return rows(one, noise, sweep, sizes)


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
