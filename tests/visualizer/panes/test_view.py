"""The view pane's events change the view; values it can not use leave it as it was."""

from __future__ import annotations

import pytest

from visualizer.panes.view import CONTROLS_WIN, ViewSettings, apply_event, controls_message


def event(row: int, value: object) -> dict:
    """What visdom forwards when row ``row`` of the properties pane is changed on the page."""
    return {
        "event_type": "PropertyUpdate",
        "target": CONTROLS_WIN,
        "propertyId": row,
        "value": value,
    }


def test_the_pane_shows_the_settings_in_use():
    rows = controls_message("env", ViewSettings(0.9, "wall", True))["data"][0]["content"]
    assert [r["value"] for r in rows] == ["0.9", 2, 1]
    assert rows[1]["values"][rows[1]["value"]] == "wall time" and rows[2]["values"][1] == "log"


def test_each_row_changes_its_setting():
    view = ViewSettings()
    assert apply_event(view, event(0, "0.95")) == ViewSettings(smoothing=0.95)
    assert apply_event(view, event(0, "0")).smoothing == 0.0
    assert apply_event(view, event(1, "1")).x_axis == "relative"
    assert apply_event(view, event(2, "1")).log_y is True


@pytest.mark.parametrize("bad", [event(0, "1"), event(0, "1.5"), event(0, ""), event(0, "nan"),
                                 event(1, "7"), event(2, "x"), event(9, "1")])  # fmt: skip
def test_values_it_can_not_use_leave_the_view_as_it_was(bad, caplog):
    view = ViewSettings(0.3, "relative", True)
    assert apply_event(view, bad) == view


def test_settings_refuse_an_unknown_axis_and_a_bad_weight():
    with pytest.raises(ValueError, match="x axis must be one of step, relative, wall"):
        ViewSettings(x_axis="time")
    with pytest.raises(ValueError, match="at least 0 and below 1"):
        ViewSettings(smoothing=1.0)
