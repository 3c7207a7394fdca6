"""History: every point of every series, the latest value per step."""

from __future__ import annotations

from snapshot_store import History


def test_history_keeps_the_latest_value_per_step():
    history = History()
    assert (
        history.add([("train", "loss", [0, 1, 2], [0.0] * 3, [0.0] * 3, [1.0, 2.0, 3.0])]) == set()
    )
    rewound = history.add([("train", "loss", [2, 3], [0.0] * 2, [0.0] * 2, [30.0, 4.0])])
    assert rewound == {("train", "loss")}
    steps, _, _, values = history.series(("train", "loss"))
    assert steps == [0, 1, 2, 3] and values == [1.0, 2.0, 30.0, 4.0]
