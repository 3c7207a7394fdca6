"""visdom's main env is the runs table: every run from its summary, filtered, sorted and paged
from the page's runs pane."""

from __future__ import annotations

import queue
import time

import pytest

from snapshot_store import Recorder
from snapshot_store.format.summary import RunSummary, SeriesStats
from tests.fixtures.servers.visdom_reading import following
from tests.fixtures.servers.waiting import wait_until
from visualizer.api.query import MAX_FILTER_CHARS
from visualizer.follower import Follower
from visualizer.layout import safe_id
from visualizer.panes.run_rows import COMPARED, SORTS, STATE_CHOICES, RunsTableState
from visualizer.panes.runs_table import INDEX_ENV, PAGE_ROWS, RunsTable
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.visdom_client import VisdomClient


@pytest.mark.integration
def test_the_main_env_lists_every_run_with_a_link_state_and_last_update(
    tmp_path, visdom_server, reader, run_name
):
    runs = tmp_path / run_name
    for name in ("a", "b"):
        with Recorder(runs / name / "pickle") as rec:  # closing it marks the run finished
            rec.log({"loss": 1.0}, step=0)
    Follower(str(runs), VisdomClient(visdom_server.endpoint)).run_once()
    pane = reader.windows(INDEX_ENV)[f"runs_{safe_id(str(runs))}"]
    text = pane["content"]
    for name in ("a", "b"):
        assert f'href="{visdom_server.url}/env/{name}"' in text
    assert text.count("finished") == 2
    assert f'href="{visdom_server.url}/env/{run_name}_compare"' in text
    assert time.strftime("%H:") in text, "the last update, as local time"
    assert reader.windows(INDEX_ENV)[f"runs_controls_{safe_id(str(runs))}"]


@pytest.mark.integration
def test_the_table_follows_a_run_as_it_goes(tmp_path, visdom_server, reader, run_name):
    store = tmp_path / run_name / "pickle"
    win = f"runs_{safe_id(str(store))}"
    rec = Recorder(store, flush_interval=0.05)
    rec.log({"loss": 1.0}, step=0)
    rec.flush()
    with following(store, visdom_server.endpoint):
        wait_until(lambda: "running" in reader.windows(INDEX_ENV)[win]["content"])
        rec.close("failed")
        wait_until(lambda: "failed" in reader.windows(INDEX_ENV)[win]["content"])


def _table() -> RunsTable:
    client = VisdomClient(VisdomEndpoint.parse("127.0.0.1", 9))  # never asked here
    return RunsTable(client, "runs", link=lambda name: f"http://open/{name}")


def _summaries(n: int) -> list[RunSummary]:
    states = ("finished", "failed", "running", "stopped")
    return [
        RunSummary(
            f"run-{i:04d}",
            state=states[i % 4],
            step=i,
            started=1000.0 + i,
            updated=2000.0 + i,
            series={"val/loss": SeriesStats(10, 9, float(i % 7), float(i % 5), 9.0)},
            config={"lr": 0.1 * (i % 3), "batch": 8},
        )
        for i in range(n)
    ]


def _event(row: int, value: object) -> dict:
    return {"event_type": "PropertyUpdate", "propertyId": row, "value": value}


def test_rows_are_filtered_by_name_and_state_and_sorted_by_any_column():
    table, state = _table(), RunsTableState(_summaries(250), 250, 250, 1)
    assert [s.name for s in table.rows(state, 0.0)][:2] == ["run-0249", "run-0248"]
    table.view = table._changed(_event(0, "run-01"))  # a name filter (a regex or plain text)
    table.view = table._changed(_event(1, STATE_CHOICES.index("failed")))
    rows = table.rows(state, 0.0)
    assert rows and all(s.name.startswith("run-01") and s.state == "failed" for s in rows)
    table.view = table._changed(_event(2, SORTS.index("best value")))
    table.view = table._changed(_event(3, 1))  # ascending
    best = [s.series["val/loss"].min for s in table.rows(state, 0.0)]
    assert best == sorted(best), "a loss's best is its smallest"


def test_ten_thousand_runs_show_one_page_of_rows_and_every_run_counted():
    table, summaries = _table(), _summaries(10_000)
    state = RunsTableState(summaries, 9_000, 10_000, 1)
    html = table.html(state, 0.0)
    assert html.count("<tr>") == PAGE_ROWS + 1
    assert "reading 9,000 of 10,000 runs" in html and "page 1 of 100" in html
    table.view = table._changed(_event(5, "100"))
    html = table.html(state, 0.0)
    assert "page 100 of 100" in html and "run-0000" in html
    table.view = table._changed(_event(5, "1e12"))
    assert "page 100 of 100" in table.html(state, 0.0), "past the end: the last page"


@pytest.mark.parametrize(
    "event",
    [
        _event(1, "99"),
        _event(2, "-5"),
        _event(3, "nan"),
        _event(4, 10**6),
        _event(5, "NaN"),
        _event(5, "Infinity"),
        _event(7, "x"),
        _event(None, None),
        _event("0", {"a": [1]}),
        _event(0, ["nested", {"x": 1}]),
    ],
)
def test_hostile_page_events_leave_the_view_sane(event):
    table, state = _table(), RunsTableState(_summaries(3), 3, 3, 1)
    table.rows(state, 0.0)  # the series to choose from are known
    view = table._changed(event)
    assert view.state in STATE_CHOICES and view.sort in table.sorts and view.page >= 0
    assert len(view.filter) <= MAX_FILTER_CHARS
    table.view = view
    table.html(state, 0.0)


def test_names_options_and_summaries_reach_the_page_as_text():
    summary = RunSummary(
        "<img src=x onerror=alert(1)>",
        state="<b>x</b>",
        config={"a": "<i>"},
        values={"<u>": {"note": "<s>"}},
    )
    other = RunSummary("ok", config={"a": "b"})
    html = _table().html(RunsTableState([summary, other], 2, 2, 1), 0.0)
    assert "<img" not in html and "<b>" not in html and "<i>" not in html
    assert "<u>" not in html and "<s>" not in html and "summary.&lt;u&gt;.note" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_compared_runs_are_marked_when_only_some_are():
    table, summaries = _table(), _summaries(30)
    table.compare_env = "sweep_compare"
    html = table.html(RunsTableState(summaries, 30, 30, 1, compared={"run-0003"}), 0.0)
    assert html.count(COMPARED) == 2, "the legend above, and run-0003's row"
    assert f"{COMPARED} run-0003" in html
    assert COMPARED not in table.html(RunsTableState(summaries, 30, 30, 2), 0.0)


def test_a_last_update_before_today_shows_its_date():
    yesterday = time.time() - 86_400
    summary = RunSummary("r", state="finished", updated=yesterday)
    html = _table().html(RunsTableState([summary], 1, 1, 1), time.time())
    assert time.strftime("%Y-%m-%d", time.localtime(yesterday)) in html


def test_the_sweeps_downloads_are_above_the_rows():
    from visualizer import markup

    table = _table()
    table.exports = markup.link("http://127.0.0.1:1/all/runs.csv", "download the runs table")
    html = table.html(RunsTableState(_summaries(3), 3, 3, 1), 0.0)
    assert html.index("download the runs table") < html.index("<table")


def test_a_baseline_typed_in_the_runs_pane_is_told_once_and_a_hostile_value_is_none():
    table, told = _table(), []
    table.on_baseline = told.append
    for value in ["  run-0003 ", "run-0003", "", {"a": 1}, "x" * 10_000]:
        table._choose_baseline(value)
    assert told == ["run-0003", None, "x" * 200], "once a change; not a string: none"
    assert table.baseline == "x" * 200


def test_the_filter_box_takes_expressions_over_config_and_summary_and_sorts_by_their_columns():
    summaries = [
        RunSummary(
            f"r{i}",
            state="finished",
            series={"val/loss": SeriesStats(3, 2, 1.0 / (i + 1), 0.1, 9.0)},
            config={"lr": (0.1, 0.01, 0.001)[i % 3], "seed": i % 4},
            values={"best": {"epoch": 10 - i}},
        )
        for i in range(12)
    ]
    table, state = _table(), RunsTableState(summaries, 12, 12, 1)
    table.view = table._changed(_event(0, "lr>0.005 and seed==3"))
    assert [s.name for s in table.rows(state, 0.0)] == ["r3", "r7"]
    table.view = table._changed(_event(0, "val/loss<0.2 or not config.lr<0.1"))
    kept = {s.name for s in table.rows(state, 0.0)}
    assert kept == {"r0", "r3", "r5", "r6", "r7", "r8", "r9", "r10", "r11"}
    table.view = table._changed(_event(0, ""))
    assert "config.lr" in table.sorts and "summary.best.epoch" in table.sorts
    table.view = table._changed(_event(2, table.sorts.index("config.lr")))
    table.view = table._changed(_event(3, 1))  # ascending
    lrs = [s.config["lr"] for s in table.rows(state, 0.0)]
    assert lrs == sorted(lrs) and lrs[0] == 0.001
    table.view = table._changed(_event(2, table.sorts.index("summary.best.epoch")))
    assert [s.name for s in table.rows(state, 0.0)][:2] == ["r11", "r10"]


def test_a_bad_expression_is_one_line_on_the_page_and_names_are_searched_instead():
    table, state = _table(), RunsTableState(_summaries(30), 30, 30, 1)
    table.view = table._changed(_event(0, 'lr>0.1 and name~"<b>'))
    html = table.html(state, 0.0)
    line = next(p for p in html.split("<p>") if "accepted:" in p)
    assert "(character 17) starts no key" in line and "searched in names instead" in line
    assert "<b>" not in html and "&lt;b&gt;" in line
    assert "0 match the filter" in html


class _Posts(VisdomClient):
    """A client that keeps what it would post, and hears no page events (none come)."""

    def __init__(self) -> None:
        super().__init__(VisdomEndpoint.parse("127.0.0.1", 9))
        self.sent: list[dict] = []

    @property
    def events(self):
        return _NoEvents()

    def post(self, route: str, msg: dict) -> str:
        self.sent.append(msg)
        return ""


class _NoEvents:
    def subscribe(self, env: str, win: str) -> queue.SimpleQueue:
        return queue.SimpleQueue()


class _Heard(_Posts):
    """A client whose page sends the events put in ``heard`` (to whichever pane asks first)."""

    def __init__(self, heard: queue.SimpleQueue) -> None:
        super().__init__()
        self.heard = heard

    @property
    def events(self):
        return self

    def subscribe(self, env: str, win: str) -> queue.SimpleQueue:
        return self.heard


def test_a_row_s_checkbox_hides_its_run_and_a_bad_change_is_ignored():
    table, state = _table(), RunsTableState(_summaries(3), 3, 3, 1)
    table.client.post = lambda *args, **kwargs: ""  # type: ignore[method-assign]
    table.html(state, 0.0)
    table._draw_controls()  # the checkboxes of the page's rows, as the page draws them
    first = table._page_names[0]
    table._toggle(0, False)
    assert table.hidden == {first} and f"{first} (hidden)" in table.html(state, 0.0)
    table._toggle(7, True)  # no such row: ignored
    table._toggle("0", True)
    assert table.hidden == {first}
    table._toggle(0, True)
    assert not table.hidden and "(hidden)" not in table.html(state, 0.0)


def test_the_runs_pane_holds_the_controls_then_show_all_then_a_checkbox_per_row():
    """One pane beside the table (issue 48: two small panes left half a 1,400 px row blank):
    its rows after the controls are 'show all' and a checkbox per row of the page; the page's
    change of a row names it by its place."""
    events: queue.SimpleQueue = queue.SimpleQueue()
    client = _Heard(events)
    table, state = (
        RunsTable(client, "runs", link=lambda n: n),
        RunsTableState(_summaries(3), 3, 3, 1),
    )
    table.draw(state, now=0.0)
    (pane,) = [m for m in client.sent if m["win"] == table.controls_win]
    rows = pane["data"][0]["content"]
    assert [r["name"] for r in rows[7:9]] == ["shown in the comparison", table._page_names[0]]
    assert [r["type"] for r in rows[8:]] == ["checkbox"] * 3
    assert (
        pane["opts"]["height"]
        == next(m for m in client.sent if m["win"] == table.win)["opts"]["height"]
    )
    events.put(_event(9, False))  # the second row's box
    client.sent.clear()
    assert table.draw(state, now=1.0) and table.hidden == {table._page_names[1]}
    (pane,) = [m for m in client.sent if m["win"] == table.controls_win]
    assert pane["data"][0]["content"][9]["value"] is False, "its box unticked"
    events.put(_event(7, "show all"))
    assert table.draw(state, now=2.0) and not table.hidden


def test_paging_keeps_the_rows_filtered_and_sorted_until_the_runs_or_the_filter_change(
    monkeypatch,
):
    """Issue 48's clicks at 100,000 runs: a page was 0.7-1.5 s, every runs filtered and sorted
    again; the next page of the same rows now takes them as kept, while no run runs."""
    from visualizer.panes import runs_table

    calls: list[int] = []
    select = runs_table.select
    monkeypatch.setattr(runs_table, "select", lambda *a: calls.append(1) or select(*a))
    table = _table()
    ended = [s for s in _summaries(400) if s.state != "running"]
    state = RunsTableState(ended, len(ended), len(ended), 1)
    first = table.rows(state, 0.0)
    table.view = table._changed(_event(5, "2"))  # page 2
    assert table.rows(state, 0.0) is first and len(calls) == 1
    table.view = table._changed(_event(0, "lr>0.1"))  # another filter: selected again
    assert table.rows(state, 0.0) is not first and len(calls) == 2
    changed = RunsTableState(ended, len(ended), len(ended), 2)  # a run's summary changed
    table.rows(changed, 0.0)
    assert len(calls) == 3
    live = RunsTableState(_summaries(400), 400, 400, 3)  # a run runs: its row ages with time
    table.rows(live, 0.0), table.rows(live, 1.0)
    assert len(calls) == 5
