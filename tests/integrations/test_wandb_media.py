"""flatten: a logged dict's keys joined with ``.``, and a depth past which it is refused."""

from __future__ import annotations

import pytest

from integrations.wandb_media import MAX_DICT_DEPTH, flatten


def _nested(levels: int) -> dict:
    top = current = {}
    for _ in range(levels - 1):
        current["k"] = current = {}
    current["v"] = 1.0
    return top


def test_nested_keys_are_joined_with_dots_in_order():
    assert flatten({"a": 1, "b": {"c": 2, "d": {"e": 3}}, "f": 4}) == {
        "a": 1, "b.c": 2, "b.d.e": 3, "f": 4,
    }  # fmt: skip
    assert flatten(_nested(MAX_DICT_DEPTH)) == {"k." * (MAX_DICT_DEPTH - 1) + "v": 1.0}


@pytest.mark.parametrize("levels", [MAX_DICT_DEPTH + 1, 5000])
def test_a_dict_nested_past_the_limit_is_a_value_error_naming_it(levels):
    with pytest.raises(ValueError, match=f"more than {MAX_DICT_DEPTH} levels deep"):
        flatten(_nested(levels))


def test_a_dict_holding_itself_is_refused_too():
    loop: dict = {"a": 1.0}
    loop["self"] = loop
    with pytest.raises(ValueError, match="levels deep"):
        flatten(loop)
