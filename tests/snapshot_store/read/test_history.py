"""History: every value of every series in logged order; a resumed run replaces from its step."""

from __future__ import annotations

import numpy as np

from snapshot_store import History, Recorder, read_store
from snapshot_store.read.history import kept_points


def _epochs(store, session):
    """Log ``epoch`` as Lightning does: the epoch's last step logs it again, one higher."""
    with Recorder(store, rank=0) as rec:
        for step, epoch in session:
            rec.log({"epoch": epoch}, step=step)


def test_two_values_logged_at_one_step_are_both_kept_in_order(tmp_path):
    store = tmp_path / "run" / "pickle"
    _epochs(store, [(0, 0.0), (1, 0.0), (1, 1.0), (2, 1.0)])
    history, _reader, _update = read_store(store)
    steps, _, _, values = history.series(("train", "epoch"))
    assert (steps, values) == ([0, 1, 1, 2], [0.0, 0.0, 1.0, 1.0])


def test_a_resumed_session_replaces_the_values_from_the_step_it_goes_back_to(tmp_path):
    store = tmp_path / "run" / "pickle"
    _epochs(store, [(step, 0.0) for step in range(6)])
    _epochs(store, [(3, 1.0), (4, 1.0), (4, 2.0)])  # resumed from the checkpoint at step 3
    history, _reader, _update = read_store(store)
    steps, _, _, values = history.series(("train", "epoch"))
    assert (steps, values) == ([0, 1, 2, 3, 4, 4], [0.0, 0.0, 0.0, 1.0, 1.0, 2.0])


def test_only_a_step_back_is_a_rewind():
    history = History()
    assert (
        history.add([("train", "loss", [0, 1, 2], [0.0] * 3, [0.0] * 3, [1.0, 2.0, 3.0])]) == set()
    )
    assert history.add([("train", "loss", [2, 3], [0.0] * 2, [0.0] * 2, [30.0, 4.0])]) == set()
    rewound = history.add([("train", "loss", [1], [0.0], [0.0], [20.0])])
    assert rewound == {("train", "loss")}
    steps, _, _, values = history.series(("train", "loss"))
    assert (steps, values) == ([0, 1], [1.0, 20.0])


def test_kept_points_drop_what_a_later_step_back_goes_under():
    assert kept_points(np.array([0, 1, 1, 2])) is None
    assert kept_points(np.array([0, 5, 10, 3, 7, 2, 8])).tolist() == [0, 5, 6]
    beyond = np.array([0, 2**70, 2**70, 5, 6], dtype=object)  # steps past int64
    assert kept_points(beyond).tolist() == [0, 3, 4]


def test_a_segment_read_late_goes_back_where_it_was_logged_and_a_resume_still_replaces():
    # steps 5..6 were logged at t=5..6 but read after 10..11 (their file was unreadable)
    late = kept_points(np.array([0, 1, 10, 11, 5, 6]), np.array([0.0, 1, 10, 11, 5, 6]))
    assert late.tolist() == [0, 1, 4, 5, 2, 3]
    # a resumed run logs step 1 again later in time: it replaces what was at 1 and after
    resumed = kept_points(np.array([0, 1, 2, 1, 2]), np.array([0.0, 1, 2, 10, 11]))
    assert resumed.tolist() == [0, 3, 4]
    # an unknown wall time: the order the points came in is all there is
    unknown = kept_points(np.array([0, 10, 5]), np.array([0.0, np.nan, 5]))
    assert unknown.tolist() == [0, 2]

    history = History()
    history.add([("train", "loss", [0, 10], [0.0] * 2, [0.0, 10.0], [1.0, 2.0])])
    history.add([("train", "loss", [5], [0.0], [5.0], [3.0])])  # read late
    assert history.series(("train", "loss"))[0] == [0, 5, 10]
