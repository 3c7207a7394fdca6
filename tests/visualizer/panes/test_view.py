"""The view pane's events change the view; values it can not use leave it as it was."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
                                 event(1, "7"), event(2, "x"), event(9, "1"), event(1, "-1"),
                                 event(1, float("inf")), event(1, 10**400), event(0, 10**400),
                                 event(2, True), event(1, [1]), event(0, {"v": 0.5})])  # fmt: skip
def test_values_it_can_not_use_leave_the_view_as_it_was(bad, caplog):
    view = ViewSettings(0.3, "relative", True)
    assert apply_event(view, bad) == view


def test_settings_refuse_an_unknown_axis_and_a_bad_weight():
    with pytest.raises(ValueError, match="x axis must be one of step, relative, wall"):
        ViewSettings(x_axis="time")
    with pytest.raises(ValueError, match="at least 0 and below 1"):
        ViewSettings(smoothing=1.0)


# Numbers a float or an index can not hold, and indexes past the choices.
_EDGES = [10**400, -(10**400), float("inf"), float("-inf"), float("nan"), -1, 3, "-1"]
_VALUES = st.recursive(
    st.none() | st.booleans() | st.text(max_size=6) | st.integers() | st.floats()
    | st.sampled_from([1e300, "1e400", "nan"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@given(row=st.sampled_from([0, 1, 2, 9]) | _VALUES, value=st.sampled_from(_EDGES) | _VALUES)
def test_any_value_from_the_page_leaves_valid_settings(row, value):
    view = ViewSettings(0.3, "relative", True)
    changed = apply_event(view, {"event_type": "PropertyUpdate", "propertyId": row, "value": value})
    assert isinstance(changed, ViewSettings)  # its own checks passed
