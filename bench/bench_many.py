"""Many runs: the visualizer following 1,000, 10,000 and 100,000 finished local runs, beside
``tensorboard --logdir`` on the same 1,000 runs, measured in the same run.

    python -m bench many                    # 1,000 to 100,000 runs: about 25 minutes
    BENCH_MANY_RUNS=200 python -m bench many   # one quick scale (or a list: 1000,10000)

Each scale is written fresh by :mod:`workloads.many_runs` (3 series x 1,000 points a
run, the store's own writer; 100,000 runs, some 11 GB, are written once and kept:
:mod:`bench.tools.kept_runs`), then the visualizer's command line starts on it with
its own visdom, as a user starts it, and :mod:`bench.many.many_measure` takes start -> URL,
memory and idle CPU of the whole process tree, and SIGTERM -> exit. The issue's
targets are for 10,000 runs and past (every summary read: 3 s at 10,000, 15 s at 100,000);
smaller scales show their trend. S3 has its own suite,
``python -m bench many_s3`` (bench/bench_many_s3.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.many.many_measure import (
    PACE,
    Pace,
    measure_comparison,
    measure_tensorboard,
    measure_visualizer,
)
from bench.many.many_pages import PAGE_ROWS
from bench.tools.kept_runs import kept_runs
from bench.tools.process_tree import MB
from tests.fixtures.servers.visdom import start_chromium
from workloads.many_runs import write_runs, write_tensorboard_runs

SCALES = (1_000, 10_000, 100_000)
KEPT_FROM = 100_000  # scales from this one are written once and kept (bench/tools/kept_runs.py)
TARGET_RUNS = 10_000  # the scale the targets are set for
TB_RUNS = 1_000  # TensorBoard's share: 10,000 runs of event files would take it many minutes
log = logging.getLogger(__name__)


def timed(write: Callable[..., None], *args: Any, **kwargs: Any) -> float:
    """Seconds ``write(*args, **kwargs)`` takes."""
    began = time.perf_counter()
    write(*args, **kwargs)
    return time.perf_counter() - began


def scales() -> tuple[int, ...]:
    """Run counts to measure: ``$BENCH_MANY_RUNS`` (``200`` or ``1000,10000``), else SCALES."""
    text = os.environ.get("BENCH_MANY_RUNS", "").strip()
    return tuple(int(part) for part in text.split(",")) if text else SCALES


def seconds(value: float | None, why: str = "") -> str:
    """``1.23 s``, or why there is no figure (``> 240 s``)."""
    return f"{value:.2f} s" if value is not None else why or "not measured"


def ratio(ours: float | None, reference: float | None, unit: str = "") -> str:
    """``ours / reference`` as "Nx TensorBoard's", or "" when either is missing."""
    if ours is None or reference is None or reference <= 0:
        return ""
    return f"{ours / reference:.1f}x TensorBoard's{unit}"


def _target(runs: int, text: str, met: bool) -> dict:
    """The target cells, filled only at the scale the issue sets them for."""
    return {"target": text, "met": met} if runs >= TARGET_RUNS else {}


def _start_row(runs: int, ours: dict, tb: dict | None) -> dict:
    reference = ""
    if tb is not None:
        reference = (
            f"TensorBoard, same runs: runs list complete {seconds(tb['runs_s'], '> cap')}, "
            f"first run's scalars {seconds(tb['first_s'], '> cap')}, "
            f"last run's {seconds(tb['last_s'], '> cap')}"
        )
    url_s = ours["url_s"]
    return {
        "benchmark": f"{runs:,} local runs (3 series x 1,000 points): start -> `visdom:` URL printed",
        "ours": seconds(url_s, ours["why"]),
        "reference": reference,
        "ratio": ratio(url_s, tb and tb["runs_s"], " runs list"),
        **_target(runs, "<= 3 s", url_s is not None and url_s <= 3.0),
    }


def _timed_row(runs: int, benchmark: str, value: float | None, why: str, cap: float | None) -> dict:
    """A row of seconds with no reference, its target ``<= cap`` s at the issue's scale
    (none where ``cap`` is None)."""
    met = cap is not None and value is not None and value <= cap
    return {
        "benchmark": f"{runs:,} local runs: {benchmark}",
        "ours": seconds(value, why),
        "reference": "",
        "ratio": "",
        **(_target(runs, f"<= {cap:.0f} s", met) if cap is not None else {}),
    }


def _read_row(runs: int, ours: dict) -> dict:
    what = "every run's summary read (the table whole), after the URL"
    return _timed_row(runs, what, ours["read_s"], "not read", 15.0 if runs >= KEPT_FROM else 3.0)


def _watch_row(runs: int, ours: dict) -> dict:
    what = "file events set up (once, when every run is read; the loop polls meanwhile), "
    what += "after the URL"
    return _timed_row(runs, what, ours["watch_s"], "not set up", None)


def _table_row(runs: int, ours: dict) -> dict:
    what = "runs table drawn in Chromium (its first page of rows, every run counted), "
    what += "the page asked for as the URL is printed"
    return _timed_row(runs, what, ours["table_s"], "not drawn", 3.0)


def compare_rows(runs: int, compared: dict) -> list[dict]:
    """The comparison of the best runs drawn in Chromium, followed from the runs table's link:
    its line plots, then the whole page, its parallel coordinates beside Plotly drawing the
    same figure alone; then the same page as a new browser's first."""
    n, why = compared["compared"], compared["why"] or "not drawn"
    what = f"comparison of the {n} best by train/loss (`--compare {n} --sort-by train/loss "
    what += "--group-by ''`, each run its own trace), once every summary is read, "
    what += f"median of {compared['rounds']} (a new Chromium each): "
    table, new = compared["from_table"], compared["new_browser"]
    linked = "followed from the runs table's `compared` link (the URL printed, opened first): "
    lines = _timed_row(runs, what + linked + "its line plots drawn", table["lines_s"], why, 3.0)
    if table["load_s"] is not None:  # the page itself, before any pane
        lines["reference"] = f"visdom's page loaded: {table['load_s']:.2f} s of it"
    alone = compared["parcoords_alone_s"]
    page = {
        "benchmark": f"{runs:,} local runs: {what}{linked}every pane drawn, parallel coordinates too",
        "ours": seconds(table["page_s"], why),
        "reference": "" if alone is None else f"Plotly alone, the same parcoords: {alone:.2f} s",
        "ratio": "",
    }
    loaded = new["load_s"]
    first = {
        "benchmark": f"{runs:,} local runs: {what}its URL asked for as a new browser's first "
        "page (nothing cached): line plots drawn; every pane drawn",
        "ours": f"{seconds(new['lines_s'], why)}; {seconds(new['page_s'], why)}",
        "reference": "" if loaded is None else f"visdom's page loaded: {loaded:.2f} s",
        "ratio": "",
    }
    return [lines, page, first, *click_rows(runs, compared)]


CLICK_WHAT = {
    "filter": 'runs table filtered by an expression (`optimizer=="adam" and lr>=0.001`; Enter)',
    "sort": "runs table sorted by a config column (`sort by` chosen)",
    "page": "runs table paged (`page` typed; Enter)",
    "open": "a run opened from its table link, until its page draws a line plot",
}


def click_rows(runs: int, compared: dict) -> list[dict]:
    """A row a page interaction, click -> drawn in Chromium (median of 3); compare 100 is the
    comparison's first row, followed from the runs table's link."""
    why = compared["why"] or ("not drawn" if runs > PAGE_ROWS else "one page of runs: not timed")
    return [
        {
            "benchmark": f"{runs:,} local runs: click -> drawn in Chromium, median of 3: {what}",
            "ours": seconds(compared["clicks"][click], why),
            "reference": "",
            "ratio": "",
            # The issue sets 0.5 s at 10,000 runs; at 100,000 the times are shown, not judged.
            **(
                _target(runs, "<= 0.5 s", (compared["clicks"][click] or 1e9) <= 0.5)
                if runs == TARGET_RUNS
                else {}
            ),
        }
        for click, what in CLICK_WHAT.items()
    ]


def _open_row(runs: int, ours: dict) -> dict:
    what = "a run not compared opened from the table's link (5 s after every run was read), "
    what += "until its page is drawn"
    return _timed_row(runs, what, ours["open_s"], "no link", 1.0)


def _memory_row(runs: int, ours: dict, tb: dict | None) -> dict:
    idle = "not reached" if ours["rss_idle"] is None else f"{ours['rss_idle'] / MB:,.0f} MB"
    at = "at the URL" if ours["url_s"] is not None else "at the cap"
    reference = ""
    if tb is not None:
        served = tb["rss_idle"] or tb["rss_loaded"]
        reference = f"TensorBoard {served / MB:,.0f} MB served, peak {tb['peak'] / MB:,.0f} MB"
    return {
        "benchmark": f"{runs:,} local runs: RSS of the visualizer + its visdom (process tree)",
        "ours": f"{ours['rss_url'] / MB:,.0f} MB {at}, {idle} after 30 s idle, "
        f"peak {ours['peak'] / MB:,.0f} MB",
        "reference": reference,
        "ratio": ratio(ours["peak"], tb and tb["peak"], " peak"),
        **_target(runs, "<= 500 MB", ours["peak"] <= 500 * MB),
    }


def _cpu_row(runs: int, ours: dict, tb: dict | None, pace: Pace) -> dict:
    cpu = ours["cpu"]
    tb_cpu = tb and tb["cpu"]
    return {
        "benchmark": f"{runs:,} local runs idle: CPU over {pace.cpu:.0f} s, "
        f"{pace.settle:.0f} s after every run was read and file events set up, a run opened "
        "(every process and thread)",
        "ours": "not started" if cpu is None else f"{cpu * 100:.1f}% of a core",
        "reference": "" if tb is None else f"TensorBoard {cpu_text(tb_cpu)}",
        "ratio": ratio(cpu, tb_cpu),
        **_target(runs, "<= 2% of a core", cpu is not None and cpu <= 0.02),
    }


def cpu_text(share: float | None) -> str:
    return "not loaded" if share is None else f"{share * 100:.1f}% of a core"


def _exit_row(runs: int, ours: dict, tb: dict | None, pace: Pace) -> dict:
    cap = f"> {pace.exit_cap:.0f} s (killed)"
    text = seconds(ours["exit_s"], cap)
    if ours["left"]:
        text += f"; {len(ours['left'])} child process(es) still running 2 s after it, killed"
    when = "" if ours["url_s"] is not None else " (sent at the start's cap, still starting)"
    if ours.get("opened"):
        when = f" after {ours['opened']} runs opened from the table{when}"
    return {
        "benchmark": f"{runs:,} local runs: SIGTERM -> exit{when}",
        "ours": text,
        "reference": "" if tb is None else f"TensorBoard {seconds(tb['exit_s'], cap)}",
        "ratio": ratio(ours["exit_s"], tb and tb["exit_s"]),
        **_target(runs, "<= 2 s", ours["exit_s"] is not None and ours["exit_s"] <= 2.0),
    }


def _generator_row(runs: int, took: float, tb_runs: int, tb_took: float) -> dict:
    return {
        "benchmark": f"generator (workloads/many_runs.py, 2 processes): {runs:,} runs written",
        "ours": f"{took:.1f} s ({took / runs * 1000:.1f} s per 1,000 runs)",
        "reference": f"TensorBoard event files, {tb_runs:,} runs: {tb_took:.1f} s",
        "ratio": "",
    }


def scale_rows(runs: int, ours: dict, tb: dict | None, pace: Pace = PACE) -> list[dict]:
    """The rows of one scale; ``tb`` is TensorBoard on the same runs, if it was measured."""
    return [
        _start_row(runs, ours, tb),
        _table_row(runs, ours),
        _read_row(runs, ours),
        _watch_row(runs, ours),
        _open_row(runs, ours),
        _memory_row(runs, ours, tb),
        _cpu_row(runs, ours, tb, pace),
        _exit_row(runs, ours, tb, pace),
    ]


def _written(root: Path, runs: int) -> tuple[Path, float | None]:
    """The folder of ``runs`` runs and the seconds writing them took (None: kept from before)."""
    if runs >= KEPT_FROM:
        return kept_runs(runs)
    store = root / f"runs-{runs}"
    return store, timed(write_runs, store, runs)


def run(pace: Pace = PACE) -> list[dict]:
    """Rows for each scale: ours (TensorBoard beside it at its scale), then the generator's speed."""
    counts = scales()
    tb_runs = min(max(counts), TB_RUNS)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-many-") as tmp:
        root = Path(tmp)
        tb_took = timed(write_tensorboard_runs, root / "tb", tb_runs)
        tb = measure_tensorboard(root / "tb", tb_runs, root / "tb-work", pace=pace)
        shutil.rmtree(root / "tb")
        generated = []
        driver = start_chromium(root)  # started before any visualizer: its own start not timed
        try:
            for runs in counts:
                store, took = _written(root, runs)
                if took is not None:
                    generated.append((runs, took))
                ours = measure_visualizer(str(store), root / f"work-{runs}", runs, pace, driver)
                rows += scale_rows(runs, ours, tb if runs == tb_runs else None, pace)
                work = root / f"cmp-{runs}"
                compared = measure_comparison(str(store), work, runs, start_chromium, pace)
                rows += compare_rows(runs, compared)
                if runs < KEPT_FROM:
                    shutil.rmtree(store)  # 10,000 runs hold about 1 GB
        finally:
            driver.quit()
        rows += [_generator_row(runs, took, tb_runs, tb_took) for runs, took in generated]
    return rows


if __name__ == "__main__":
    from bench.__main__ import print_table

    logging.basicConfig(level=logging.WARNING)
    print_table(run())
