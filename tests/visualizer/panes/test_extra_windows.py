"""The extra record kinds in visdom: every SummaryWriter method that has a pane shows in it."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshot_store.format.images import encode_png
from snapshot_store.format.schema import SCHEMAS, record_problem
from snapshot_store.read.store_reader import Update
from tests.fixtures.logged.writer_calls import call_every_method
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from trainer import SummaryWriter
from visualizer.model.extradata import ExtraData
from visualizer.model.rundata import RunData
from visualizer.panes.display import RunDisplay
from visualizer.panes.extra_windows import (
    HPARAMS_WIN,
    ExtraWindows,
    extra_window,
    percentiles,
    plotted_series,
)

HIST = {"min": 0.0, "max": 4.0, "num": 4, "sum": 6.0, "sum_squares": 14.0}


def test_percentiles_of_a_stored_histogram_interpolate_within_buckets():
    data = {**HIST, "limits": [0.0, 2.0, 4.0], "counts": [0.0, 2.0, 2.0]}
    assert percentiles(data, (0, 25, 50, 75, 100)) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_extra_data_keeps_the_latest_per_tag_and_every_histogram_step():
    extras = ExtraData()
    hist = {**HIST, "limits": [4.0], "counts": [4.0]}
    extras.apply([("text", "t", 0, 1.0, {"text": "a"}), ("text", "t", 1, 1.0, {"text": "b"})])
    extras.apply([("histogram", "w", s, 1.0, hist) for s in range(3)])
    extras.apply([("hparams", "r1", 0, 1.0, {"hparams": {}, "metrics": {}})])
    assert extras.texts["t"] == [(0, "a"), (1, "b")] and sorted(extras.histograms["w"]) == [0, 1, 2]
    assert extras.changed == {("text", "t"), ("histogram", "w"), ("hparams", "")}


def table_cells(table: object) -> list[list[str]]:
    """The text of each cell of an HTML table, row by row."""
    rows = re.findall(r"<tr>(.*?)</tr>", str(table))
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in rows]


def _content(reader, env: str, win: str) -> object:
    return reader.windows(env)[win]["content"]


@pytest.mark.integration
def test_every_method_with_a_pane_shows_in_visdom(tmp_path, visdom_server, reader, run_name):
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"\x08\x07")
    store = tmp_path / run_name / "pickle"
    with SummaryWriter(store) as writer:
        call_every_method(writer, onnx_file)
        for step in range(1, 4):
            writer.add_histogram("distribution centers", np.random.random(1000) + step, step)
            writer.add_scalar("twse/0050", float(step), step)
        png = encode_png(np.zeros((8, 8, 3), np.uint8))  # a W&B-style Table, as wandb.log stores it
        table = {"columns": ["image", "note"], "rows": [[png, "<b>as text</b>"]]}
        writer.recorder.log_record("table", "predictions", table, 2)
    wins = {
        extra_window("table", "predictions"),
        extra_window("text", "lstm"),
        extra_window("graph", "graph"),
        extra_window("text", "onnx_graph"),
        extra_window("tensor", "x"),
        extra_window("histogram", "distribution centers"),
        extra_window("histogram", "histogram_with_raw_data"),
        HPARAMS_WIN,
        extra_window("pr_curve", "pr_curve"),
        extra_window("pr_curve", "pr_raw"),
        extra_window("embedding", "default"),
        extra_window("mesh", "my_mesh"),
        extra_window("audio", "audio"),
        extra_window("video", "video"),
        extra_window("layout", "Taiwan_twse"),
        extra_window("layout", "Taiwan_lines"),
        extra_window("layout", "USA_margin"),
        *(f"image_{name}" for name in ("my_image", "boxes", "figure")),
    }
    with following(store, visdom_server.endpoint):
        wait_until(lambda: wins <= set(reader.windows(run_name)), timeout=30)
    assert "This is an lstm" in _content(reader, run_name, extra_window("text", "lstm"))
    hparams = table_cells(_content(reader, run_name, HPARAMS_WIN))
    assert "lr" in hparams[0] and ["r4", "4", "0.4", "40"] in hparams
    median = reader.traces(run_name, extra_window("histogram", "distribution centers"))["median"]
    assert median[0] == [1, 2, 3] and median[1][2] > median[1][1] > median[1][0]
    assert "<audio controls>" in _content(reader, run_name, extra_window("audio", "audio"))
    assert "data:image/gif" in _content(reader, run_name, extra_window("video", "video"))
    table = _content(reader, run_name, extra_window("table", "predictions"))
    assert "<img src='data:image/png;base64," in table and "&lt;b&gt;as text&lt;/b&gt;" in table
    mesh = json.loads(reader.viz.get_window_data(extra_window("mesh", "my_mesh"), run_name))
    assert mesh["content"]["data"][0]["type"] == "mesh3d"
    chart = reader.traces(run_name, extra_window("layout", "Taiwan_twse"))
    assert chart == {"twse/0050": ([1, 2, 3], [1.0, 2.0, 3.0])}
    points = reader.traces(run_name, extra_window("embedding", "default"))["default"]
    assert len(points[0]) == 100


NUMBER = st.one_of(st.floats(), st.integers(-(2**63), 2**63 - 1))
SMALL_INT = st.integers(-3, 12)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, st.text(max_size=3))
FIELD = st.one_of(
    st.lists(NUMBER, max_size=12),
    st.lists(SMALL_INT, max_size=12),
    st.lists(st.text(max_size=3), max_size=6),
    SCALAR,
    st.binary(max_size=8),
    st.dictionaries(st.text(max_size=3), SCALAR, max_size=3),
    st.dictionaries(
        st.text(max_size=3),
        st.dictionaries(
            st.text(max_size=3),
            st.tuples(
                st.sampled_from(["Multiline", "Margin", "x"]), st.lists(st.text(max_size=3))
            ).map(list),
            max_size=2,
        ),
        max_size=2,
    ),
)


LAYOUT = st.dictionaries(
    st.text(max_size=3),
    st.dictionaries(
        st.text(max_size=3),
        st.tuples(st.sampled_from(["Multiline", "Margin", "x"]), st.lists(st.text(max_size=3))).map(
            list
        ),
        max_size=2,
    ),
    max_size=2,
)


def _field(name: str, n: int) -> st.SearchStrategy:
    """Values of the type field ``name`` holds (lists of one length ``n``), usually."""
    numbers = st.lists(NUMBER, min_size=n, max_size=n)
    typed = {
        "text": st.text(max_size=5),
        "dtype": st.text(max_size=5),
        "labels": st.lists(st.text(max_size=3), min_size=n, max_size=n),
        "shape": st.lists(SMALL_INT, max_size=3),
        "faces": st.lists(SMALL_INT, max_size=9),
        "colors": st.lists(SMALL_INT, min_size=n, max_size=n),
        "num_thresholds": SMALL_INT,
        "wav": st.binary(max_size=8),
        "gif": st.binary(max_size=8),
        "hparams": st.dictionaries(st.text(max_size=3), SCALAR, max_size=3),
        "metrics": st.dictionaries(st.text(max_size=3), NUMBER, max_size=3),
        "layout": LAYOUT,
    }
    lists = {
        "limits",
        "counts",
        "x",
        "y",
        "values",
        "vertices",
        "tp",
        "fp",
        "tn",
        "fn",
        "precision",
        "recall",
    }
    own = numbers if name in lists else typed.get(name, NUMBER)
    return st.one_of(own, own, own, FIELD)


@st.composite
def records(draw):
    kind = draw(st.sampled_from([*SCHEMAS, "nope"]))
    n = draw(st.sampled_from([0, 1, 3, 6]))
    data = {name: draw(_field(name, n)) for name in SCHEMAS.get(kind, {"x": None})}
    return (kind, draw(st.text(max_size=4)), draw(SMALL_INT), draw(st.floats()), data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(), max_size=6))
def test_any_record_the_schema_passes_can_be_drawn(batch):
    """Whatever a store holds, a record either fails its schema or the viewer draws it."""
    valid = [r for r in batch if record_problem(r) is None]
    run = RunData("fuzz")
    run.extras.apply(valid)
    sent: list[dict] = []
    windows = ExtraWindows(lambda route, msg: sent.append(msg), "fuzz")
    windows.draw(run, now=100.0)
    assert len(sent) >= len({(r[0], r[1]) for r in valid if r[0] not in ("hparams", "layout")})


def _hparams_row(tag: str, lr: float, metrics: dict[str, float]):
    return ("hparams", tag, 0, 1.0, {"hparams": {"lr": lr}, "metrics": metrics})


def test_each_default_hparams_record_is_a_row_and_a_named_run_keeps_its_last():
    run = RunData("r")
    run.extras.apply([_hparams_row("hparams", i / 10, {"acc": float(i)}) for i in range(5)])
    run.extras.apply([_hparams_row("sweep-a", 1.0, {"acc": 1.0})])
    run.extras.apply([_hparams_row("sweep-a", 2.0, {"acc": 2.0})])  # the same run again
    run.extras.apply([_hparams_row(".", 3.0, {"hparam/acc": float("nan")})])
    assert [(r[1], r[4]["hparams"]["lr"]) for r in run.extras.hparams] == [
        *(("hparams", i / 10) for i in range(5)),
        ("sweep-a", 2.0),
        (".", 3.0),
    ]
    sent: list[dict] = []
    ExtraWindows(lambda route, msg: sent.append(msg), "r").draw(run, now=0.0)
    [table] = [m["data"][0]["content"] for m in sent if m["win"] == HPARAMS_WIN]
    cells = table_cells(table)
    assert len(cells) == 1 + 7 and cells[5][0] == "hparams 5"
    # A metric the row names without a value is its scalar's last value, "-" until logged.
    assert cells[0] == ["run", "lr", "acc", "hparam/acc"] and cells[7] == [".", "3", "", "-"]


def test_an_hparams_table_of_12000_hparams_keeps_its_metrics_within_the_pane_budget():
    run = RunData("r")
    hparams = {f"h{i:05d}": "x" * 40 for i in range(12_000)}
    run.extras.apply(
        [("hparams", "hparams", 0, 1.0, {"hparams": hparams, "metrics": {"acc": 0.5}})]
    )
    sent: list[dict] = []
    ExtraWindows(lambda route, msg: sent.append(msg), "r").draw(run, now=0.0)
    [table] = [m["data"][0]["content"] for m in sent if m["win"] == HPARAMS_WIN]
    assert len(table) < 20_000  # was 0.7 MB
    assert table_cells(table)[0][-1] == "acc" and "11,961 more hparams" in table


def _tensorboard_sessions(logdir) -> int:
    """How many runs under ``logdir`` TensorBoard's hparams plugin sees a session in."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    sessions = 0
    for events in {p.parent for p in logdir.rglob("events.out.tfevents.*")}:
        acc = EventAccumulator(str(events))
        acc.Reload()
        try:
            sessions += "_hparams_/session_start_info" in acc.PluginTagToContent("hparams")
        except KeyError:  # a run without hparams (the log dir's own)
            pass
    return sessions


TABLE_JS = """
const pane = Array.from(document.querySelectorAll('.react-grid-item'))
  .find(p => p.textContent.includes(arguments[0]));
if (pane) pane.scrollIntoView();
return pane ? Array.from(pane.querySelectorAll('tr')).map(
  tr => Array.from(tr.children).map(td => td.textContent)) : null;
"""


@pytest.mark.integration
def test_five_add_hparams_calls_are_five_rows_on_the_page(
    tmp_path, visdom_server, chromium_driver, run_name
):
    from selenium.webdriver.support.ui import WebDriverWait
    from torch.utils.tensorboard import SummaryWriter as TBWriter
    from torch.utils.tensorboard.summary import hparams

    from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S
    from visualizer.follower import Follower
    from visualizer.visdom_client import VisdomClient

    store = tmp_path / run_name / "pickle"
    for writer in (TBWriter(str(tmp_path / "tb")), SummaryWriter(store)):
        with writer:  # add_hparams' docstring example, as the TensorBoard tutorial runs it
            for i in range(5):
                writer.add_hparams(
                    {"lr": 0.1 * i, "bsize": i}, {"hparam/accuracy": 10 * i, "hparam/loss": 10 * i}
                )
    assert _tensorboard_sessions(tmp_path / "tb") == 5
    with SummaryWriter(store) as writer:  # and the file-writer workaround: the run's own row
        for part in hparams({"lr": 0.5, "bsize": 8}, {"hparam/accuracy": 0.0}):
            writer.file_writer.add_summary(part)
        writer.add_scalar("hparam/accuracy", 77.0)
    Follower(str(store), VisdomClient(visdom_server.endpoint)).run_once()
    chromium_driver.get(f"{visdom_server.url}/env/{run_name}")
    rows = WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
        lambda d: (t := d.execute_script(TABLE_JS, f"{run_name}: hparams")) and len(t) == 7 and t
    )
    assert rows[0] == ["run", "bsize", "lr", "hparam/accuracy", "hparam/loss"]
    assert [r[0] for r in rows[1:]] == [*(f"hparams {i}" for i in range(1, 6)), "."]
    assert rows[3][1:] == ["2", "0.2", "20", "20"] and rows[4][2] == "0.3"  # 0.1 * 3
    assert rows[6][1:] == ["8", "0.5", "77", ""]  # accuracy: the scalar of its tag
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert chromium_driver.save_screenshot(str(ARTIFACTS / "hparams_rows.png"))


def test_lightnings_hp_metric_placeholder_is_in_the_hparams_table_not_a_window():
    # Lightning logs hp_metric = -1 once with its hparams: a window drew one invisible point.
    run = RunData("r")
    run.apply(Update(scalars=[(g, n, [0], [0], [1.0], [v]) for g, n, v in SCALARS_OF_LIGHTNING]))
    run.extras.apply([_hparams_row(".", 0.1, {"hp_metric": float("nan")})])
    assert set(plotted_series(run)) == {("", "train_loss")}
    assert [spec.title for spec, _, _ in RunDisplay._windows(run)] == ["train losses"]
    sent: list[dict] = []
    ExtraWindows(lambda route, msg: sent.append(msg), "r").draw(run, now=0.0)
    [table] = [m["data"][0]["content"] for m in sent if m["win"] == HPARAMS_WIN]
    assert table_cells(table)[1] == [".", "0.1", "-1"]
    run.apply(Update(scalars=[("", "hp_metric", [1], [0], [2.0], [0.7])]))
    assert ("", "hp_metric") in plotted_series(run), "logged again: a series, in its window"
    added = ("hparams", "hparam/accuracy")  # add_hparams' metric, given: a window
    run.apply(Update(scalars=[(*added, [0], [0], [1.0], [0.9])]))
    assert added in plotted_series(run)


SCALARS_OF_LIGHTNING = [("", "hp_metric", -1.0), ("", "train_loss", 0.5)]


def test_a_wandb_table_is_a_table_with_thumbnails_and_its_cells_are_text():
    png = encode_png(np.zeros((28, 28, 1), np.uint8))
    hostile = "<img src=x onerror=alert(1)>"
    record = {"columns": ["image", hostile], "rows": [[png, hostile], [None, 0.25]]}
    assert record_problem(("table", "preds", 3, 1.0, record)) is None
    assert record_problem(("table", "preds", 3, 1.0, {**record, "rows": [[1]]})) is not None
    run = RunData("r")
    run.extras.apply([("table", "preds", 3, 1.0, record)])
    sent: list[dict] = []
    ExtraWindows(lambda route, msg: sent.append(msg), "r").draw(run, now=0.0)
    [msg] = [m for m in sent if m["win"] == extra_window("table", "preds")]
    content = msg["data"][0]["content"]
    assert msg["opts"]["title"] == "preds @ step 3"
    assert content.count("<img src='data:image/png;base64,") == 1 and hostile not in content
    assert content.count(html.escape(hostile, quote=False)) == 2 and ">0.25</td>" in content
    assert ">None<" not in content  # an empty cell is empty
