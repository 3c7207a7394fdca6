"""What a user of the page sees: first draw in Chromium, a 10,000,000-point ingest, idle cost.

    python -m bench viewer

Every part is real: the project's offline visdom server on a free port, the
visualizer's own command line in a subprocess, headless Chromium (Debian's
chromium and chromedriver) reading Plotly's own state in the page, and the
``tensorboard`` command for the idle reference.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

from bench.tools.process_tree import cpu_share
from bench.tools.replay import (
    REPLAY_CHILD,
    TENSORBOARD_CHILD,
    subprocess_json,
    write_tensorboard,
)
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.visdom import start_chromium
from visualizer.layout import window_for_group
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.sources.runs import env_name
from visualizer.visdom_client import VisdomClient

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)

DRAW_POINTS, DRAW_SERIES = 1_000_000, 4  # the shape bench/tools/replay.py's TensorBoard log has
INGEST_POINTS = 10_000_000
IDLE_RUNS, IDLE_GROUPS, IDLE_STEPS = 100, 5, 1_000
IDLE_SECONDS = 30.0
SWITCHES = 5  # env switches timed, with the visualizer following and with visdom alone
WAIT_S = 120  # a bound on waiting for a page or a replay, not a target

# Per plot on the page, Plotly's own state: each trace's name and last x.
TRACES_JS = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).map(div =>
  (div.data || []).map(t => [t.name, t.x.length ? t.x[t.x.length - 1] : null]));
"""


def _write_store(store: Path, points: int, series: int, group: str = "train") -> None:
    with Recorder(store) as rec:
        for step in range(points // series):
            rec.log({f"loss_{i}": step * 0.001 + i for i in range(series)}, step=step, group=group)


def _visualizer(store: Path, port: int, log_path: Path) -> subprocess.Popen:
    """The visualizer's command line, following ``store`` into the visdom server on ``port``."""
    command = [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(store)]
    command += ["--port", str(port), "--no-start-server", "--log-level", "WARNING"]
    with log_path.open("wb") as err:
        return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _until(done: Callable[[], bool], what: str, interval: float = 0.02) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"benchmark: {what} did not happen within {WAIT_S} s")
        time.sleep(interval)


def _printed_url(proc: subprocess.Popen) -> str:
    """The page the visualizer prints on stdout (`visdom: <url>`)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("visdom: "):
            return line.split(" ", 1)[1].strip()
    raise RuntimeError(f"the visualizer exited ({proc.wait()}) without printing its page")


def _drawn(driver: Any, plots: int, last: int) -> bool:
    """True when the page has ``plots`` Plotly plots, each trace ending at step ``last``."""
    state = [p for p in driver.execute_script(TRACES_JS) if p]
    return len(state) >= plots and all(x == last for p in state for _, x in p)


# --- from the visualizer's start to every window of a 1,000,000-point run drawn ---------------


def _first_draw(root: Path, endpoint: VisdomEndpoint, driver: Any) -> dict:
    """Seconds from the visualizer's start to its URL printed and to the run drawn in Chromium;
    and, as the reference, the same page opened in a fresh Chromium with nothing else running."""
    store = root / "view-1m" / "pickle"
    _write_store(store, DRAW_POINTS, DRAW_SERIES)
    last = DRAW_POINTS // DRAW_SERIES - 1
    started = time.perf_counter()
    proc = _visualizer(store, endpoint.port, root / "first-draw.log")
    try:
        # A user opens the page the visualizer prints (`visdom: <url>`) once the run is drawn.
        url = _printed_url(proc)
        printed = time.perf_counter() - started
        driver.get(url)
        _until(lambda: _drawn(driver, 1, last), "the first draw")
        seconds = time.perf_counter() - started
    finally:
        _stop(proc)
    (root / "cold-page").mkdir()
    cold = start_chromium(root / "cold-page")
    try:
        cold.get("about:blank")  # as the first draw's browser, started long before its page
        time.sleep(2.0)
        started = time.perf_counter()
        cold.get(url)
        _until(lambda: _drawn(cold, 1, last), "the page alone")
        page_alone = time.perf_counter() - started
    finally:
        cold.quit()
    return {"seconds": seconds, "printed": printed, "page_alone": page_alone}


# --- a 10,000,000-point run: ingest time and peak memory --------------------------------------


def _ingest(root: Path, endpoint: VisdomEndpoint) -> dict:
    store = root / "ingest-10m" / "pickle"
    _write_store(store, INGEST_POINTS, DRAW_SERIES)
    wall = time.perf_counter()
    ours = subprocess_json(REPLAY_CHILD.format(store=str(store), port=endpoint.port))
    ours["wall_seconds"] = time.perf_counter() - wall  # interpreter start included
    return ours


def _tensorboard_1m(root: Path) -> dict:
    """TensorBoard's EventAccumulator loading the 1,000,000 points of bench/tools/replay.py's log."""
    logdir = root / "tensorboard-1m"
    write_tensorboard(logdir)
    return subprocess_json(TENSORBOARD_CHILD.format(logdir=str(logdir)), timeout=1200)


# --- 100 runs of 5 groups, idle: CPU, and switching env in the page ---------------------------


def _write_runs(root: Path) -> None:
    for r in range(IDLE_RUNS):
        with Recorder(root / f"run{r:03d}" / "pickle") as rec:
            for step in range(IDLE_STEPS):
                for g in range(IDLE_GROUPS):
                    rec.log({"loss": 1.0 / (step + 1) + g}, step=step, group=f"g{g}")


def _all_drawn(endpoint: VisdomEndpoint) -> bool:
    client, win = VisdomClient(endpoint), window_for_group(f"g{IDLE_GROUPS - 1}").win
    for r in range(IDLE_RUNS):
        env = env_name(f"run{r:03d}", None, True)
        try:
            traces = client.window_data(env, win)["content"]["data"]
        except Exception:
            return False  # not drawn yet
        if not traces or traces[0]["x"][-1] != IDLE_STEPS - 1:
            return False
    return True


def _idle(root: Path, endpoint: VisdomEndpoint, driver: Any) -> dict:
    runs = root / "runs"
    _write_runs(runs)
    proc = _visualizer(runs, endpoint.port, root / "idle.log")
    try:
        _until(lambda: _all_drawn(endpoint), "the replay of 100 runs", interval=1.0)
        time.sleep(5.0)  # the last redraws and the index page settle
        cpu = cpu_share(proc.pid, IDLE_SECONDS)
        switches = _switches(endpoint, driver, range(0, IDLE_RUNS, IDLE_RUNS // SWITCHES))
    finally:
        _stop(proc)
    # The reference: the same page with nothing following, other envs of the same runs.
    alone = _switches(endpoint, driver, range(1, IDLE_RUNS, IDLE_RUNS // SWITCHES))
    return {"cpu": cpu, "switches": switches, "alone": alone}


def _switches(endpoint: VisdomEndpoint, driver: Any, runs: range) -> list[float]:
    """Seconds from loading each run's env URL to its plots drawn, in Chromium."""
    times = []
    for r in runs[:SWITCHES]:
        started = time.perf_counter()
        driver.get(endpoint.env_url(env_name(f"run{r:03d}", None, True)))
        _until(lambda: _drawn(driver, IDLE_GROUPS, IDLE_STEPS - 1), "an env switch")
        times.append(time.perf_counter() - started)
    return times


def _tensorboard_idle(root: Path) -> float:
    """CPU share of ``tensorboard --logdir`` over the same 100 runs, idle after its first load."""
    from torch.utils.tensorboard import SummaryWriter

    logdir = root / "tb-runs"
    for r in range(IDLE_RUNS):
        with SummaryWriter(str(logdir / f"run{r:03d}")) as writer:
            for step in range(IDLE_STEPS):
                for g in range(IDLE_GROUPS):
                    writer.add_scalar(f"g{g}/loss", 1.0 / (step + 1) + g, step)
    port = free_port()
    command = [str(Path(sys.executable).parent / "tensorboard"), "--logdir", str(logdir)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with (root / "tensorboard.log").open("wb") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    try:
        url = f"http://127.0.0.1:{port}/data/plugin/scalars/tags"

        def loaded() -> bool:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    return answer.read().count(b'"g0/loss"') >= IDLE_RUNS
            except OSError:
                return False

        _until(loaded, "TensorBoard's first load", interval=1.0)
        time.sleep(5.0)
        return cpu_share(proc.pid, IDLE_SECONDS)
    finally:
        _stop(proc)


def _times(reference: float, ours: float, better: str, worse: str) -> str:
    """``reference / ours`` as "Nx better", or "Nx worse" when ours is the larger cost."""
    if ours <= reference:
        return f"{reference / max(ours, 1e-9):.1f}x {better}"
    return f"{ours / max(reference, 1e-9):.0f}x {worse}"


def _rows(draw: dict, ingest: dict, tb: dict, idle: dict, tb_idle: float) -> list[dict]:
    tb_10m = tb["seconds"] * INGEST_POINTS / tb["points"]
    return [
        {
            "benchmark": f"visualizer start -> {DRAW_POINTS:,}-point run drawn in Chromium (Plotly state)",
            "ours": f"{draw['seconds']:.2f} s (URL printed at {draw['printed']:.2f} s)",
            "reference": f"EventAccumulator load alone {tb['seconds']:.1f} s; "
            f"visdom's page alone, fresh Chromium {draw['page_alone']:.2f} s",
            "ratio": f"{tb['seconds'] / draw['seconds']:.1f}x faster",
            "target": "<= 3 s",
            "met": draw["seconds"] <= 3.0,
        },
        {
            "benchmark": f"ingest {INGEST_POINTS:,} points (--once, process start to exit)",
            "ours": f"{ingest['wall_seconds']:.1f} s",
            "reference": f"EventAccumulator {tb_10m:.0f} s (1M measured x10)",
            "ratio": f"{tb_10m / ingest['wall_seconds']:.1f}x faster",
            "target": "<= 5 s",
            "met": ingest["rc"] == 0 and ingest["wall_seconds"] <= 5.0,
        },
        {
            "benchmark": f"ingest {INGEST_POINTS:,} points: peak memory (VmHWM)",
            "ours": f"{ingest['maxrss_mb']:.0f} MB",
            "reference": f"EventAccumulator {tb['maxrss_mb']:.0f} MB at 1M",
            "ratio": "",
            "target": "<= 300 MB",
            "met": ingest["maxrss_mb"] <= 300,
        },
        {
            "benchmark": f"{IDLE_RUNS} runs x {IDLE_GROUPS} groups idle: CPU over {IDLE_SECONDS:.0f} s",
            "ours": f"{idle['cpu'] * 100:.1f}% of a core",
            "reference": f"tensorboard --logdir {tb_idle * 100:.1f}%",
            "ratio": _times(tb_idle, idle["cpu"], "less", "more"),
            "target": "<= 5%",
            "met": idle["cpu"] <= 0.05,
        },
        {
            "benchmark": f"{IDLE_RUNS} runs idle: switch env in Chromium (load a run's env URL "
            f"-> its {IDLE_GROUPS} plots drawn; median of {SWITCHES}, slowest)",
            "ours": f"{median(idle['switches']):.2f} s, {max(idle['switches']):.2f} s",
            "reference": f"visdom's page alone {median(idle['alone']):.2f} s, "
            f"{max(idle['alone']):.2f} s",
            "ratio": f"{median(idle['switches']) / median(idle['alone']):.2f}x the page alone",
            "target": "<= 1 s",
            "met": median(idle["switches"]) <= 1.0,
        },
    ]


def run() -> list[dict]:
    """Rows: first draw in Chromium, 10M-point ingest time and memory, idle CPU and env switch."""
    from visualizer.server.process import VisdomServer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        endpoint = VisdomEndpoint(port=free_port())
        with VisdomServer(endpoint, env_path=root / "envs", log_path=root / "visdom.log"):
            driver = start_chromium(root)
            try:
                draw = _first_draw(root, endpoint, driver)
                ingest = _ingest(root, endpoint)
                idle = _idle(root, endpoint, driver)
            finally:
                driver.quit()
        tb = _tensorboard_1m(root)
        tb_idle = _tensorboard_idle(root)
    return _rows(draw, ingest, tb, idle, tb_idle)


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
