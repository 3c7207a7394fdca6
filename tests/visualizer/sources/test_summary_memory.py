"""What the catalog holds of a run (visualizer/sources/summary_memory.py): shared objects,
never other values. The runs table, filters, sorts, the Api and alerts see what was read."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import pytest

from snapshot_store.alert_rules import events
from visualizer.alerts.rules import session_start
from visualizer.api.filters import fields_of, sort_key, summary_of
from visualizer.model.summary import from_documents
from visualizer.panes.run_rows import cells
from visualizer.sources.summary_memory import SESSION, START, share_strings

NOW = 1795841100.0


def _status() -> dict:
    time = 1795841018.5566747
    entry = {"count": 1000, "step": 999, "last": 0.5, "min": 0.25, "max": 2.0, "time": time}
    series = {tag: dict(entry) for tag in ("train/loss", "train/accuracy", "val/loss")}
    series["zero/a"] = entry | {"time": 0.0, "last": -0.0, "count": 1}
    series["zero/b"] = entry | {"time": -0.0, "last": 0.0, "count": 1}
    status = {
        "state": "finished",
        "step": 999,
        "start_time": 1795840519.0566747,
        "session_start": 1795840519.0566747,
        "last_log_time": time,
        "updated": time,
        "host": "vm",
        "series": series,
        "hparams": {"lr": 1.0, "epochs": 1, "flag": True, "nan": float("nan"), "big": 10**30},
    }
    # Unpickled, as a store is read: every number its own object.
    return pickle.loads(pickle.dumps(status))


def test_a_runs_equal_numbers_become_one_object_and_every_value_reads_the_same():
    summary = from_documents("r", None, _status())
    before = copy.deepcopy(summary)
    share_strings(summary)
    # Ended: no heartbeat field, nor a session_start that is its start_time.
    kept = {k: v for k, v in before.status.items() if k not in ("host", "session_start")}
    assert repr(summary) == repr(replace(before, status=kept))
    series = summary.series
    assert len({id(stats.count) for tag, stats in series.items() if tag[0] != "z"}) == 1
    times = [summary.updated, summary.status["updated"], summary.status["last_log_time"]]
    assert all(value is series["val/loss"].time for value in times), "one float, not five"
    assert summary.step is summary.status["step"] is series["train/loss"].step
    assert summary.started is summary.status["start_time"]
    ended = [events.ended("finished", 999, session_start(s.status)) for s in (summary, before)]
    assert ended[0] == ended[1], "the alert of its end: one key"
    # Zeros keep their sign (0.0 == -0.0), ints and floats and bools their kind (1 == 1.0 == True).
    assert repr(series["zero/a"].time) == "0.0" and repr(series["zero/b"].time) == "-0.0"
    assert [repr(summary.config[k]) for k in ("lr", "epochs", "flag")] == ["1.0", "1", "True"]
    # What the runs table, filters, sorts, the Api and alerts read of it.
    columns = (sorted(summary.config), [])
    for tag in ("train/loss", "zero/b"):
        assert cells(summary, tag, columns, "link", NOW) == cells(before, tag, columns, "link", NOW)
    assert repr(fields_of(summary)) == repr(fields_of(before))
    assert repr(summary_of(summary)) == repr(summary_of(before))
    for field in ("config.lr", "summary.val/loss", "created_at", "summary._timestamp"):
        assert sort_key(field)(fields_of(summary)) == sort_key(field)(fields_of(before))


@pytest.mark.parametrize(
    ("state", "session", "start"),
    [
        ("finished", 20.5, 10.5),
        ("running", 10.5, 10.5),
        ("failed", 10.0, 10),
        ("stopped", 0.0, 0.0),
    ],
    ids=["resumed", "running", "other-kind", "zero"],
)
def test_a_session_start_is_left_out_only_where_it_is_an_ended_runs_start(state, session, start):
    status = pickle.loads(pickle.dumps({"state": state, SESSION: session, START: start}))
    summary = from_documents("r", None, status)
    share_strings(summary)
    assert repr(summary.status[SESSION]) == repr(session)
