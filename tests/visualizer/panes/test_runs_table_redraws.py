"""When the runs table is sent again: a choice on the page at once, the data's changes at most
every REFRESH_S, every run read at once, and a running run's row (its times) only while a
page shows the table."""

from __future__ import annotations

from tests.visualizer.panes.test_runs_table import _event, _Posts, _summaries
from visualizer.panes.run_rows import RunsTableState
from visualizer.panes.runs_table import REFRESH_S, RunsTable


def test_a_choice_on_the_page_redraws_the_table_at_once_new_data_at_most_every_refresh():
    """Issue 48: clicks took 2.3-2.5 s each, the table rebuilt at most every REFRESH_S; that
    pace is for the data, a sort or page chosen on the page is drawn at the next pass."""
    client = _Posts()
    table = RunsTable(client, "runs", link=lambda name: f"http://open/{name}")
    summaries = _summaries(250)
    assert table.draw(RunsTableState(summaries, 250, 250, 1), now=100.0)
    table.view = table._changed(_event(5, "2"))  # page 2 chosen
    client.sent.clear()
    assert table.draw(RunsTableState(summaries, 250, 250, 1), now=100.1)
    assert any("page 2 of 3" in str(m.get("data")) for m in client.sent)
    client.sent.clear()
    assert not table.draw(RunsTableState(summaries[:200], 200, 200, 2), now=100.2)
    assert not client.sent, "new data waits for its slot"
    assert table.draw(RunsTableState(summaries[:200], 200, 200, 2), now=100.1 + REFRESH_S)


def test_the_table_is_drawn_at_once_when_every_run_is_read():
    """The last runs read no longer wait for the data's slot (REFRESH_S): at 10,000 runs the
    whole table came up to 2 s after the viewer's log said every run was read."""
    client = _Posts()
    table = RunsTable(client, "runs", link=lambda name: f"http://open/{name}")
    summaries = _summaries(250)
    assert table.draw(RunsTableState(summaries[:100], 100, 250, 1), now=100.0)
    assert not table.draw(RunsTableState(summaries[:200], 200, 250, 2), now=100.1)
    assert table.draw(RunsTableState(summaries, 250, 250, 3), now=100.2)
    assert any("250 runs" in str(m.get("data")) for m in client.sent)


def test_a_running_runs_row_ticks_only_while_a_page_shows_the_table():
    """A running run's row changes with time ("5 s ago"), so the table was rebuilt every
    REFRESH_S with no page open: 10,000 rows sorted every 2 s, most of an idle viewer's CPU."""
    table = RunsTable(_Posts(), "runs", link=lambda name: f"http://open/{name}")
    rebuilt: list[float] = []
    html = table.html
    table.html = lambda state, now: rebuilt.append(now) or html(state, now)  # type: ignore
    state = RunsTableState(_summaries(8), 8, 8, 1)  # runs 2 and 6 are running
    table.draw(state, now=100.0)
    table.on_a_page = False
    for tick in range(1, 4):
        table.draw(state, now=100.0 + tick * REFRESH_S)
    assert rebuilt == [100.0], "rebuilt for no page"
    table.draw(RunsTableState(_summaries(9), 9, 9, 2), now=200.0)
    assert rebuilt[-1] == 200.0, "new data is drawn still"
    table.on_a_page = True  # a page opened on it: its times brought up to date at once
    table.draw(RunsTableState(_summaries(9), 9, 9, 2), now=200.0 + REFRESH_S)
    assert rebuilt[-1] == 200.0 + REFRESH_S
