"""Measures of a viewer over many runs, as a user feels them: the visualizer's own command
line (with its own visdom) and ``tensorboard --logdir``, each a subprocess whose whole
process tree is measured (:mod:`bench.tools.process_tree`). Every wait has a cap, so a hang is
reported as "> cap", never waited on.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import re
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.many.many_clicks import CLICKS, clicks
from bench.many.many_pages import PAGE_ROWS, comparison_drawn, link_to, parcoords_alone, table_drawn
from bench.tools.process_tree import PeakRss, cpu_share, terminate_tree, tree_rss
from tests.fixtures.servers.net import free_port
from visualizer.panes.compare import DEFAULT_COMPARE
from visualizer.sources.runs import env_name
from workloads.many_runs import SERIES, run_name, run_spec

ROOT = Path(__file__).resolve().parents[2]
URL_PREFIX = "visdom: "
READ_ALL = "visualizer.runset: read "  # the log's line once every run's summary is read
WATCHING = "file events on for "  # the log's line once the tree's file watches are set up
LINKS = re.compile(r"CSV downloads at http://127\.0\.0\.1:(\d+)/")
COMPARED = 100  # runs compared by the comparison measure: the "100 best runs"
TB_POINTS = 1000  # TensorBoard serves at most this many points of a scalar series by default


@dataclass(frozen=True)
class Pace:
    """How long each phase waits; tests shorten them."""

    start_cap: float = 240.0  # start -> URL (or TensorBoard's data served)
    settle: float = 5.0  # after the start, before idle is measured
    cpu: float = 20.0  # idle CPU measured over this
    memory_idle: float = 30.0  # memory measured again this long after the start
    exit_cap: float = 30.0  # SIGTERM -> exit
    rounds: int = 3  # openings of the comparison page a way, each in a new browser
    # S3 requests counted over this: a running run no page shows is read every 5 minutes
    # (visualizer.feeds.READ_GAPS), so a minute's count would catch that read or not.
    s3_idle: float = 300.0


PACE = Pace()


def visualizer(
    source: str, work: Path, env: dict[str, str] | None = None, flags: tuple[str, ...] = ()
) -> subprocess.Popen:
    """``python run_visualizer_local.py --pickle-dir SOURCE --port FREE [FLAGS]``, starting its
    own visdom.

    ``env`` replaces this process's environment; the alert state goes to ``work`` (a
    user's would be left with 10,000 runs' worth). ``$BENCH_VIEWER_FLAGS`` adds options to
    every suite's viewer, e.g. curve rules: ``--alert-rule diverging:train/loss --alert-cmd
    builtins.print`` (what judging every running run costs, idle).
    """
    command = [sys.executable, "run_visualizer_local.py", "--pickle-dir", source]
    extra = shlex.split(os.environ.get("BENCH_VIEWER_FLAGS", ""))
    command += ["--port", str(free_port()), *flags, *extra]
    env = {**(os.environ if env is None else env), "XDG_STATE_HOME": str(work / "state")}
    with (work / "visualizer.log").open("ab") as err:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True
        )


def _stdout_lines(proc: subprocess.Popen) -> queue.Queue[str | None]:
    """Every line ``proc`` prints, drained on a thread (so a full pipe never blocks it); None at EOF."""
    lines: queue.Queue[str | None] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None

    def drain() -> None:
        for line in stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=drain, daemon=True).start()
    return lines


@dataclass(frozen=True)
class Printed:
    """When the ``visdom: <url>`` line came (seconds from the start; None past the cap), its
    URL, and why there is none."""

    seconds: float | None
    url: str = ""
    why: str = ""

    @property
    def base(self) -> str:
        """The visdom server's URL (the printed one is an env's page)."""
        return self.url.split("/env/", 1)[0]


def wait_url(proc: subprocess.Popen, began: float, cap: float) -> Printed:
    """When ``proc`` printed its ``visdom: <url>`` line, counted from ``began``."""
    lines = _stdout_lines(proc)
    while (left := began + cap - time.perf_counter()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            return Printed(None, why=f"exited ({proc.wait()}) before printing its URL")
        if line.startswith(URL_PREFIX):
            return Printed(time.perf_counter() - began, line[len(URL_PREFIX) :].strip())
    return Printed(None, why=f"> {cap:.0f} s")


def _sleepuntil(moment: float) -> None:
    time.sleep(max(0.0, moment - time.perf_counter()))


def measure_visualizer(
    source: str, work: Path, runs: int, pace: Pace = PACE, driver: Any = None
) -> dict[str, Any]:
    """Start -> URL, the runs table drawn in ``driver`` (a Chromium, when given), memory at the
    URL and after ``pace.memory_idle`` s, idle CPU, SIGTERM -> exit."""
    work.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    proc = visualizer(source, work)
    out: dict[str, Any] = {"cpu": None, "rss_idle": None, "read_s": None, "open_s": None}
    out["table_s"] = out["watch_s"] = None
    try:
        with PeakRss(proc.pid) as peak:
            printed = wait_url(proc, began, pace.start_cap)
            out["url_s"], out["why"] = printed.seconds, printed.why
            out["rss_url"] = tree_rss(proc.pid)  # at the cap when there is no URL
            if printed.seconds is not None:
                started = time.perf_counter()
                if driver is not None:  # a person opens the page as the URL shows
                    out["table_s"] = table_drawn(driver, printed.base, runs, pace.start_cap)
                    driver.get("about:blank")  # an open page is not the viewer's idle
                # Up to --compare runs are all read before the URL; past it, this line says when.
                out["read_s"] = until(all_read(work, runs), started, pace.start_cap)
                # Set up once, after the reads (seconds of CPU at 100,000 runs): not idle.
                out["watch_s"] = until(lambda: WATCHING in log_text(work), started, pace.start_cap)
                time.sleep(pace.settle)
                # The oldest run (not compared, so not read yet), on a settled viewer.
                out["open_s"] = open_run(work, run_name(0))
                out["cpu"] = cpu_share(proc.pid, pace.cpu)
                _sleepuntil(started + pace.memory_idle)
                out["rss_idle"] = tree_rss(proc.pid)
                out["opened"] = open_runs(work, runs)  # the exit, after a person's use
    finally:
        out["exit_s"], out["left"] = terminate_tree(proc, pace.exit_cap)
    out["peak"] = peak.peak
    return out


def all_read(work: Path, runs: int) -> Callable[[], bool]:
    """Whether the visualizer in ``work`` has read every run's summary: the line it logs past
    :data:`DEFAULT_COMPARE` runs; fewer are read with the first table (no line to wait for)."""
    return (lambda: READ_ALL in log_text(work)) if runs > DEFAULT_COMPARE else (lambda: True)


# How a comparison page is opened: from the runs table's "compared" link, the printed URL's
# page opened first as a person does (the browser has just run visdom's scripts), and as the
# first page of a new browser (nothing cached, the scripts compiled from scratch).
WAYS = ("from_table", "new_browser")


def measure_comparison(
    source: str, work: Path, runs: int, browser: Callable[[Path], Any], pace: Pace = PACE
) -> dict[str, Any]:
    """The ``COMPARED`` best runs by train/loss, each drawn alone (``--group-by ''``), once
    every summary is read: for each of :data:`WAYS`, the medians over ``pace.rounds``
    (alternating, each in a new Chromium from ``browser(profile_dir)``) of the seconds from
    asking for the comparison page until it is loaded, until its line plots draw every run,
    and until every pane is drawn; and Plotly alone drawing its parallel coordinates again."""
    work.mkdir(parents=True, exist_ok=True)
    compared = min(COMPARED, runs)
    flags = ("--compare", str(compared), "--sort-by", "train/loss", "--group-by", "")
    began = time.perf_counter()
    proc = visualizer(source, work, flags=flags)
    out: dict[str, Any] = {"compared": compared, "rounds": pace.rounds, "parcoords_alone_s": None}
    out["clicks"] = dict.fromkeys(CLICKS)
    times: dict[str, list[dict[str, float | None]]] = {way: [] for way in WAYS}
    try:
        printed = wait_url(proc, began, pace.start_cap)
        out["why"] = printed.why
        if printed.seconds is not None:
            out["read_s"] = until(all_read(work, runs), began, pace.start_cap)
            env = env_name("compare", Path(source).name, True)
            for round_, way in itertools.product(range(pace.rounds), WAYS):
                profile = work / f"chromium-{round_}-{way}"
                profile.mkdir()
                driver = browser(profile)
                try:
                    times[way].append(_open_comparison(driver, way, printed.base, env, runs, pace))
                    if len(times[WAYS[-1]]) == pace.rounds:  # the last opening: its parcoords
                        out["parcoords_alone_s"] = parcoords_alone(driver, pace.start_cap)
                finally:
                    driver.quit()
        if printed.seconds is not None and runs > PAGE_ROWS:  # a table of pages: click them
            took = clicks(browser(_profile(work)), printed.base, source, runs, pace.start_cap)
            out["clicks"] = {click: median_of(rounds) for click, rounds in took.items()}
    finally:
        terminate_tree(proc, pace.exit_cap)
    for way in WAYS:
        out[way] = {key: median_of([t[key] for t in times[way]]) for key in TIMES}
    return out


TIMES = ("load_s", "lines_s", "page_s")  # what :func:`comparison_drawn` times


def _open_comparison(
    driver: Any, way: str, base: str, env: str, runs: int, pace: Pace
) -> dict[str, float | None]:
    """One opening of the comparison page ``env`` the ``way`` of :data:`WAYS`."""
    url: str | None = f"{base}/env/{env}"
    if way == "from_table":  # the URL printed is the runs table's; its link names the env
        table_drawn(driver, base, runs, pace.start_cap)
        url = link_to(driver, env)
    if url is None:
        return dict.fromkeys(TIMES)
    return comparison_drawn(driver, url, min(COMPARED, runs), len(SERIES), pace.start_cap)


def _profile(work: Path) -> Path:
    (work / "chromium-clicks").mkdir()
    return work / "chromium-clicks"


def median_of(values: list[float | None]) -> float | None:
    """The median, None when any value is missing (a page not drawn is not averaged away)."""
    if not values or any(value is None for value in values):
        return None
    return statistics.median(value for value in values if value is not None)


def log_text(work: Path) -> str:
    """What the visualizer started in ``work`` logged so far."""
    return (work / "visualizer.log").read_text(errors="replace")


def open_run(work: Path, name: str) -> float | None:
    """Seconds the runs table's link of run ``name`` takes to answer, as a person opens it: it
    answers once the run is read and its page drawn. None without a link server."""
    found = LINKS.search(log_text(work))
    if found is None:
        return None
    url = f"http://127.0.0.1:{found.group(1)}/open/{name}"
    began = time.perf_counter()
    request = urllib.request.Request(url)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        opener.open(request, timeout=60).close()
    except urllib.error.HTTPError as err:
        if err.code != 303:
            return None
    return time.perf_counter() - began


OPENED_BEFORE_EXIT = 200  # runs opened from the table's links before SIGTERM (issue 48)


def open_runs(work: Path, runs: int) -> int:
    """Open up to OPENED_BEFORE_EXIT runs one after another through the runs table's links, as
    a person clicking through them; how many answered."""
    opened = (open_run(work, run_name(index)) for index in range(min(runs, OPENED_BEFORE_EXIT)))
    return sum(seconds is not None for seconds in opened)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 303 itself is the answer timed: the page is drawn by then


def _json(url: str) -> Any:
    """The JSON at ``url``, or None while the server does not answer it."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError):
        return None


def until(done: Callable[[], bool], began: float, cap: float) -> float | None:
    """Seconds from ``began`` until ``done()``, polled every 0.2 s; None past ``cap``."""
    while not done():
        if time.perf_counter() - began > cap:
            return None
        time.sleep(0.2)
    return time.perf_counter() - began


def _scalars_served(base: str, index: int, points: int) -> Callable[[], bool]:
    """Whether TensorBoard serves run ``index``'s train/loss whole (up to its sampling)."""
    query = urllib.parse.urlencode({"run": run_name(index), "tag": "train/loss"})
    want = min(run_spec(index, points=points).steps, TB_POINTS)
    return lambda: len(_json(f"{base}/data/plugin/scalars/scalars?{query}") or []) >= want


def measure_tensorboard(
    logdir: Path, runs: int, work: Path, points: int = 1000, pace: Pace = PACE
) -> dict:
    """``tensorboard --logdir``: its runs list holding every run, the first and the last run's
    scalars served, its memory, idle CPU and SIGTERM -> exit."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [str(Path(sys.executable).parent / "tensorboard"), "--logdir", str(logdir)]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    began = time.perf_counter()
    with (work / "tensorboard.log").open("ab") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    base, out = f"http://127.0.0.1:{port}", {"cpu": None, "rss_idle": None}
    try:
        with PeakRss(proc.pid) as peak:
            out["runs_s"] = until(
                lambda: len(_json(f"{base}/data/runs") or []) >= runs, began, pace.start_cap
            )
            out["first_s"] = until(_scalars_served(base, 0, points), began, pace.start_cap)
            out["last_s"] = until(_scalars_served(base, runs - 1, points), began, pace.start_cap)
            out["rss_loaded"] = tree_rss(proc.pid)
            if out["last_s"] is not None:
                time.sleep(pace.settle)
                out["cpu"] = cpu_share(proc.pid, pace.cpu)
                out["rss_idle"] = tree_rss(proc.pid)
    finally:
        out["exit_s"], out["left"] = terminate_tree(proc, pace.exit_cap)
    out["peak"] = peak.peak
    return out
