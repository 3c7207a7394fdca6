"""The subset of W&B's run filters: what each keeps, and one line for what is refused."""

from __future__ import annotations

import pytest

from visualizer.api.filters import compile_filters, dig

RUN = {
    "name": "lr-0.01",
    "state": "finished",
    "created_at": 1795867200.5,  # 2026-11-28T12:00:00.5Z
    "config": {"lr": 0.01, "model": {"depth": 3}, "tags": ["a"]},
    "summary": {"val/loss": 0.25},
}


@pytest.mark.parametrize(
    "filters, kept",
    [
        (None, True),
        ({"state": "finished"}, True),
        ({"state": "failed"}, False),
        ({"config.lr": 0.01}, True),
        ({"config.model.depth": 3}, True),
        ({"config.model.depth": {"$gte": 4}}, False),
        ({"config.missing": {"$exists": False}}, True),
        ({"name": {"$regex": "^lr-"}}, True),
        ({"display_name": {"$regex": "^sgd"}}, False),
        ({"summary.val/loss": {"$lt": 0.3}}, True),
        ({"summary_metrics.val/loss": {"$gt": 0.3}}, False),
        ({"config.lr": {"$in": [0.1, 0.01]}}, True),
        ({"config.lr": {"$nin": [0.1, 0.01]}}, False),
        ({"config.lr": {"$ne": 0.1}}, True),
        ({"$or": [{"state": "failed"}, {"config.lr": 0.01}]}, True),
        ({"$and": [{"state": "finished"}, {"config.lr": 0.1}]}, False),
        ({"config.optimizer": {"$gt": 1}}, False),  # absent: outside any range
        ({"created_at": {"$gt": "2026-11-28T12:00:00Z"}}, True),  # W&B's ISO text, UTC
        ({"created_at": {"$lt": "2026-11-28"}}, False),
        ({"created_at": {"$gte": "2026-11-28T13:00:00+02:00"}}, True),  # 11:00 UTC
    ],
)
def test_each_filter_keeps_the_runs_it_names(filters, kept):
    assert compile_filters(filters)(RUN) is kept


def test_a_string_beside_a_number_is_outside_the_range_not_an_error():
    assert compile_filters({"config.lr": {"$gt": 0.1}})({**RUN, "config": {"lr": "auto"}}) is False


@pytest.mark.parametrize(
    "filters, named",
    [
        ({"tags": "x"}, "'tags'"),
        ({"config.lr": {"$near": 1}}, "$near"),
        ({"config.lr": {"$gt": 1, "$lt": 2}}, "one operator"),
        ({"name": {"$regex": "("}}, "not a regular expression"),
        ({"$or": {"state": "x"}}, "$or takes a list"),
        ({"config.lr": {"$in": 3}}, "$in takes a list"),
        (["state"], "filters are a dict"),
        ({"created_at": {"$gt": "yesterday"}}, "compared with a time"),
    ],
)
def test_a_filter_it_can_not_take_is_refused_in_one_line_naming_it(filters, named):
    with pytest.raises(ValueError) as caught:
        compile_filters(filters)
    message = str(caught.value)
    assert named in message and "accepted: fields name, state" in message
    assert "\n" not in message


def test_a_dotted_key_is_found_flat_or_nested():
    assert dig({"model.depth": 2}, "model.depth") == 2
    assert dig({"a": {"b.c": {"d": 1}}}, "a.b.c.d") == 1
