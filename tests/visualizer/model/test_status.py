"""The status panel: STALE detection, ETA, rendering; the window layout of groups."""

from __future__ import annotations

import time

import pytest

from visualizer.follower import DEFAULT_MAX_IDLE_INTERVAL, DEFAULT_POLL_INTERVAL, PollSchedule
from visualizer.layout import window_for_group
from visualizer.model.status import (
    REFRESH_IDLE,
    REFRESH_RUNNING,
    EtaEstimator,
    format_duration,
    is_stale,
    refresh_after,
    status_view,
)

NOW = 1_700_000_000.0


def running(updated_ago: float, **extra):
    return {"state": "running", "updated": NOW - updated_ago, "heartbeat_seconds": 5.0, **extra}


def test_stale_only_when_running_and_heartbeat_late():
    assert not is_stale(running(4.0), NOW)
    assert not is_stale(running(14.0), NOW)
    assert is_stale(running(16.0), NOW)
    assert not is_stale({**running(1000.0), "state": "finished"}, NOW)


def test_panel_shows_fields_and_flags_stale():
    meta = {"world_size": 4, "hosts": ["node1"]}
    view = status_view(
        running(
            60.0, step=500, epoch=1.5, total_steps=1000, host="node1", last_log_time=NOW - 61.0
        ),
        meta,
        None,
        NOW,
    )
    rows = dict(view.rows)
    assert view.stale and "STALE" in view.html()
    assert rows["step"] == "500 / 1000" and rows["epoch"] == "1.50"
    assert rows["world size"] == "4" and rows["host"] == "node1"
    assert rows["last heartbeat"] == "1m 00s ago"
    fresh = status_view(running(1.0, step=1), meta, None, NOW)
    assert not fresh.stale and "RUNNING" in fresh.html()


def test_eta_from_recent_rate_and_reset_on_resume():
    eta = EtaEstimator()
    eta.observe({"updated": NOW, "step": 100})
    eta.observe({"updated": NOW + 10, "step": 200, "total_steps": 1200})
    assert eta.rate() == 10.0
    assert eta.eta_seconds({"step": 200, "total_steps": 1200}) == 100.0
    eta.observe({"updated": NOW + 20, "step": 50})  # resumed from an earlier checkpoint
    assert eta.rate() is None


def test_eta_falls_back_to_the_rate_since_start():
    status = {"updated": NOW, "start_time": NOW - 100, "step": 500, "total_steps": 1500}
    assert EtaEstimator().eta_seconds(status) == 200.0


def test_format_duration():
    assert format_duration(5) == "5s"
    assert format_duration(125) == "2m 05s"
    assert format_duration(3 * 3600 + 240) == "3h 04m"


def test_groups_map_to_windows():
    assert window_for_group("train").title == "train losses"
    assert window_for_group("val").win == window_for_group("validation").win == "validation"
    assert window_for_group("metric").win == "metrics"
    assert window_for_group("lr").title == "learning rate"
    assert window_for_group("throughput").win == "throughput"
    other = window_for_group("Loss/weird group")
    assert other.title == "Loss/weird group" and other.win == "group_Loss_weird_group"


def test_idle_s3_polling_costs_at_most_120_requests_an_hour():
    """One LIST per poll; the default back-off makes an idle hour cheap."""
    schedule, now, polls = PollSchedule(DEFAULT_POLL_INTERVAL, DEFAULT_MAX_IDLE_INTERVAL), 0.0, 0
    schedule.record(True, now)  # the replay found data, then nothing changes
    while schedule.due < 3600:
        now = schedule.due
        polls += 1
        schedule.record(False, now)
    assert polls <= 120, polls
    schedule.record(True, now)
    assert schedule.delay == DEFAULT_POLL_INTERVAL, "a change brings the poll rate back at once"


BAD_VALUES = [float("nan"), float("inf"), -float("inf"), "soon", [1, 2], None, True]
NUMBER_FIELDS = ["total_steps", "step", "epoch", "updated", "start_time", "heartbeat_seconds"]


@pytest.mark.parametrize("field", NUMBER_FIELDS)
@pytest.mark.parametrize("bad", BAD_VALUES, ids=repr)
def test_a_malformed_number_shows_as_a_dash(field, bad):
    """A status written by a buggy or newer trainer must never break the panel."""
    status = {
        **running(1.0, step=500, epoch=1.5, total_steps=1000, start_time=NOW - 100),
        field: bad,
    }
    eta = EtaEstimator()
    eta.observe(status)
    view = status_view(status, {"world_size": 2}, eta, NOW)
    rows = dict(view.rows)
    view.html()
    shown = {
        "total_steps": rows["step"] == "500",
        "step": rows["step"].startswith("- /") and rows["ETA"] == "-",
        "epoch": rows["epoch"] == "-",
        "updated": rows["last heartbeat"] == "-" and rows["ETA"] == "-",
        "start_time": rows["ETA"] == "-",
        # judged by the default interval (5 s) instead: 30 s of silence is stale, 1 s is not
        "heartbeat_seconds": not view.stale and is_stale({**status, "updated": NOW - 30}, NOW),
    }
    assert shown[field], rows
    assert not any(word in value for value in rows.values() for word in ("nan", "inf", "soon", "["))


def test_a_stopped_run_shows_stopped_distinct_from_failed_and_finished():
    badges = {
        state: status_view({"state": state, "updated": NOW, "step": 5}, {}, now=NOW).html()
        for state in ("stopped", "failed", "finished")
    }

    assert "STOPPED" in badges["stopped"] and "FAILED" not in badges["stopped"]
    colors = {state: html.split("color:")[1].split("'")[0] for state, html in badges.items()}
    assert len(set(colors.values())) == 3, colors
    assert not is_stale({"state": "stopped", "updated": NOW - 3600}, NOW)  # over, not silent


def test_the_panel_shows_what_a_full_disk_kept_from_the_store_and_checkpoints():
    status = {
        "state": "failed",
        "step": 10,
        "unwritten_records": {"scalars": 20_000, "images": 3, "extras": 0},
        "checkpoints_skipped": 2,
    }
    rows = dict(status_view(status, {}, None, NOW).rows)
    assert rows["not written (disk full)"] == "3 images, 20000 scalars"
    assert rows["checkpoints skipped (disk full)"] == "2"
    clean = dict(status_view({"state": "finished", "unwritten_records": {}}, {}, None, NOW).rows)
    assert not any("disk full" in key for key in clean)
    odd = {"state": "failed", "unwritten_records": ["<b>", 1], "checkpoints_skipped": "x"}
    assert not any("disk full" in key for key in dict(status_view(odd, {}, None, NOW).rows))


def test_an_epoch_never_given_shows_as_none_not_zero():
    """A SummaryWriter or W&B-style run gives no epoch: its writer's status says 0."""
    epochs = {e: dict(status_view({"state": "running", "epoch": e}, {}, now=NOW).rows)["epoch"]
              for e in (0.0, 0.25, 3)}  # fmt: skip
    assert epochs == {0.0: "-", 0.25: "0.25", 3: "3.00"}


def test_an_ended_runs_panel_shows_clock_times_which_do_not_age():
    # "last value logged 7s ago" stayed for 30 s once the run had finished (its panel is
    # redrawn rarely): an ended run shows when, a running one how long ago.
    ended = {"state": "finished", "updated": NOW - 5, "last_log_time": NOW - 7}
    rows = dict(status_view(ended, {}, now=NOW).rows)
    assert rows["last value logged"] == time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW - 7))
    assert "ago" not in rows["last heartbeat"]
    running = dict(status_view({**ended, "state": "running"}, {}, now=NOW).rows)
    assert running["last value logged"] == "7s ago"
    assert (
        dict(status_view({**ended, "last_log_time": 1e300}, {}, now=NOW).rows)["last value logged"]
        == "-"
    ), "a time no calendar holds"
    assert refresh_after({"state": "running"}) == REFRESH_RUNNING
    assert refresh_after(ended) == refresh_after(None) == REFRESH_IDLE
