"""Nothing a store says reaches the page as markup: markup in every field of every record
kind, followed by the real visualizer into a real visdom, reads as text in Chromium."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from selenium.webdriver.support.ui import WebDriverWait

from run_core import atomic
from snapshot_store import Recorder
from snapshot_store.format import frames as fmt
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, ROOT, console_errors, pane_count
from tests.fixtures.servers.processes import reap
from tests.fixtures.servers.visdom_reading import VisdomReader
from tests.fixtures.servers.waiting import wait_until
from visualizer.markup import Html, element, escaped, plot_strings
from visualizer.sources.runs import env_name

# Each would run script or add an element if a page took it as HTML (or Plotly as its markup).
PAYLOADS = (
    "<img src=x onerror=window.__pwned=1>",  # no '/': a run directory's name too
    '"><svg onload=window.__pwned=2>',
    "'><img src=x onerror=window.__pwned=3 id=pwned3>",
    '<b id=pwned4>b</b><a href="javascript:window.__pwned=4">a</a>',
    "<span id=pwned5 style='color:red'>s</span> &amp; &lt;",
)
# status, view, options, 2 plots, an image, and a window per extra kind (10)
RUN_WINDOWS = 16
# What a page shows after the tests' pages load: script run, elements added, the text itself.
PAGE_JS = """
return {pwned: window.__pwned === undefined ? null : String(window.__pwned),
        added: Array.from(document.querySelectorAll(
          '[id^=pwned], [onerror], [onload], a[href^="javascript"]')).map(e => e.outerHTML),
        text: document.body.textContent,
        plots: Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => p.textContent)};
"""


def test_text_escapes_what_html_and_plotly_read_and_keeps_our_markup() -> None:
    assert escaped("<a href='x'>&\"") == "&lt;a href=&#39;x&#39;&gt;&amp;&#34;"
    assert escaped(3) == "3" and escaped(Html("<b>ours</b>")) == "<b>ours</b>"
    assert element("p", "<i>", Html("<br>")) == "<p>&lt;i&gt;<br></p>"
    msg = {
        "data": [{"x": [1], "y": [2], "name": "<b>n</b>", "text": ["<i>"]}],
        "layout": {"title": {"text": "<a>"}, "yaxis": {"title": "y<"}},
        "opts": {"title": "<pane>"},  # visdom's pane title is React text: as it is
    }
    out = plot_strings(msg)
    assert out["data"][0]["name"] == "&lt;b&gt;n&lt;/b&gt;" and out["data"][0]["text"] == [
        "&lt;i&gt;"
    ]
    assert (
        out["layout"]["title"]["text"] == "&lt;a&gt;" and out["layout"]["yaxis"]["title"] == "y&lt;"
    )
    assert out["opts"]["title"] == "<pane>" and msg["data"][0]["name"] == "<b>n</b>"
    text_pane = {"data": [{"content": "<p>ours</p>", "type": "text"}], "win": "w", "eid": "e"}
    assert plot_strings(text_pane) == text_pane


def _records(mark: Callable[[str], str]) -> dict[str, tuple[str, dict[str, Any]]]:
    """kind -> (tag, data): a record of every extra kind, ``mark(field)`` in each text field."""
    return {
        "text": (mark("text tag"), {"text": mark("text")}),
        "tensor": (
            mark("tensor tag"),
            {"shape": [2], "dtype": mark("dtype"), "values": [1.0, 2.0]},
        ),
        "histogram": (
            mark("histogram tag"),
            {
                "min": 0.0,
                "max": 1.0,
                "num": 2,
                "sum": 1.0,
                "sum_squares": 1.0,
                "limits": [0.5, 1.0],
                "counts": [1.0, 1.0],
            },
        ),
        "hparams": (
            mark("hparams tag"),
            {
                "hparams": {mark("hparam"): mark("hparam value")},
                "metrics": {mark("metric"): 0.5},
            },
        ),
        "pr_curve": (
            mark("pr tag"),
            {
                **{f: [1.0, 0.5] for f in ("tp", "fp", "tn", "fn", "precision", "recall")},
                "num_thresholds": 2,
            },
        ),
        "audio": (mark("audio tag"), {"wav": b"RIFF....WAVE", "sample_rate": 8000.0}),
        "video": (mark("video tag"), {"gif": b"GIF89a", "fps": 4.0}),
        "points": (
            mark("points tag"),
            {"x": [0.0, 1.0], "y": [1.0, 0.0], "labels": [mark("label")] * 2},
        ),
        "mesh": (
            mark("mesh tag"),
            {"vertices": [0.0, 0, 0, 1, 0, 0, 0, 1, 0], "faces": [0, 1, 2], "colors": []},
        ),
        "layout": (
            "",
            {"layout": {mark("category"): {mark("chart"): ["Multiline", [mark("missing")]]}}},
        ),
    }


def _hostile_run(store: Path, mark: Callable[[str], str], lr: float) -> list[str]:
    """A run with ``mark(field)`` in every field a record kind has; the fields' texts."""
    with Recorder(
        store, options={mark("option"): mark("value"), "lr": lr}, flush_interval=0.05
    ) as rec:
        for step in range(3):
            rec.log({mark("scalar"): 1.0 + step}, step=step, group=mark("group"))
            rec.log({mark("train tag"): 2.0 - step}, step=step)
        rec.log_image(
            mark("image"), np.full((3, 8, 8), 0.5), step=2, group=mark("image group"),
            captions=[mark("caption"), "plain"],
        )  # fmt: skip
        records = _records(mark)
        for kind, (tag, data) in records.items():
            rec.log_record(kind, tag, data, step=2)
    # What the recorder writes itself (state, host) is framed by hand, as another writer could.
    status = fmt.decode_document((store / fmt.STATUS_FILE).read_bytes(), "status")
    status.update(state=mark("state"), host=mark("host"), summary={mark("key"): mark("summary")})
    atomic.write_atomic(store / fmt.STATUS_FILE, fmt.encode_document(status))
    fields = ["option", "value", "scalar", "group", "train tag", "image", "image group", "state"]
    fields += ["caption", "key", "summary"]
    fields += [f"{kind} tag" for kind in records if kind not in ("layout", "pr_curve")]
    fields += ["pr tag", "text", "dtype", "hparam", "host"]
    return [mark(f) for f in fields] + [
        mark(f) for f in ("hparam value", "metric", "category", "chart")
    ]


def test_markup_in_every_field_of_every_kind_reads_as_text_in_chromium(
    tmp_path: Path, visdom_server: Any, reader: VisdomReader, chromium_driver: Any
) -> None:
    root = tmp_path / f"fuzz-{time.monotonic_ns()}"
    shown: list[str] = []
    names = [PAYLOADS[0], "plain"]
    marks = [lambda f, i=i: f"{PAYLOADS[(i + len(f)) % len(PAYLOADS)]} {f}" for i in range(2)]
    for i, name in enumerate(names):
        shown += _hostile_run(root / name / "pickle", marks[i], 0.1 * (i + 1))
    log = tmp_path / "visualizer.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "visualizer", "--pickle-dir", str(root), "--no-start-server",
             "--port", str(visdom_server.endpoint.port)],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    envs = [env_name(n, None, True) for n in names] + [env_name("compare", root.name, True), "main"]
    try:
        for env, least in zip(envs, (RUN_WINDOWS, RUN_WINDOWS, 4), strict=False):
            wait_until(lambda e=env, n=least: len(reader.windows(e)) >= n, timeout=BROWSER_WAIT_S)
        seen = _open_every_env(chromium_driver, reader, visdom_server.url, envs)
    except AssertionError as err:
        raise AssertionError(f"{err}\nthe visualizer's log:\n{log.read_text()}") from None
    finally:
        reap(proc)
    page_text = " ".join(seen)
    missing = [s for s in shown if s not in page_text]
    assert not missing, f"not shown as text: {missing}"
    # Plotly's own markup too: legends and titles read as written (the run's name compared).
    plotted = " ".join(t for t in seen if t.startswith("plotted: "))
    in_plots = [marks[0]("scalar"), marks[0]("train tag"), marks[1]("group"), PAYLOADS[0]]
    assert [s for s in in_plots if s not in plotted] == []


def _open_every_env(driver: Any, reader: VisdomReader, url: str, envs: list[str]) -> list[str]:
    """Each env's page, once all its windows show: nothing ran or was added; its text."""
    texts = []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for env in envs:
        driver.get(f"{url}/env/{env}")
        want = len(reader.windows(env))
        WebDriverWait(driver, BROWSER_WAIT_S).until(lambda d, n=want: pane_count(d) >= n)
        time.sleep(1.0)  # an onerror or onload fires once its image has failed to load
        page = driver.execute_script(PAGE_JS)
        assert page["pwned"] is None, f"script ran on env {env!r}: {page['pwned']}"
        assert page["added"] == [], f"markup became elements on env {env!r}: {page['added']}"
        driver.save_screenshot(str(ARTIFACTS / f"markup_fuzz_{env[:40]}.png"))
        errors = console_errors(driver)
        assert errors == [], f"env {env!r}: {errors}"
        texts += [page["text"], *(f"plotted: {plot}" for plot in page["plots"])]
    return texts


def test_markup_in_a_buckets_run_reads_as_text_in_chromium(
    tmp_path: Path, s3_bucket: Any, visdom_server: Any, reader: VisdomReader, chromium_driver: Any
) -> None:
    from tests.fixtures.servers.visdom_reading import following
    from tests.visualizer.sources.test_s3 import upload

    def mark(field: str) -> str:
        return f"{PAYLOADS[len(field) % len(PAYLOADS)]} {field}"

    store = tmp_path / PAYLOADS[0] / "pickle"
    shown = _hostile_run(store, mark, 0.1)
    upload(s3_bucket, store, f"runs/{PAYLOADS[0]}/pickle/")  # the key's folder: the run's name
    env = f"fuzz-{time.monotonic_ns()}"
    with following(s3_bucket.uri("runs/"), visdom_server.endpoint, env=env, poll_interval=0.05):
        run_env = env_name(PAYLOADS[0], env, True)
        wait_until(lambda: len(reader.windows(run_env)) >= RUN_WINDOWS, timeout=BROWSER_WAIT_S)
        page_text = " ".join(_open_every_env(chromium_driver, reader, visdom_server.url, [run_env]))
    # (the status badge shows the state in capitals)
    assert [s for s in shown if s.lower() not in page_text.lower()] == []
