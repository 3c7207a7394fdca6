"""A logged name and its store key: the name comes back exactly, two names never share a key."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from run_core.tags import key_of, tag_of

NAMES = st.text(alphabet="ab/_", max_size=8)


@given(NAMES)
def test_the_logged_name_comes_back_from_its_key(tag):
    assert tag_of(*key_of(tag)) == tag


@given(NAMES, NAMES)
def test_two_names_never_share_a_key(a, b):
    assert (key_of(a) == key_of(b)) == (a == b)


def test_keys_split_at_the_first_slash_only():
    assert key_of("eval/loss") == ("eval", "loss")
    assert key_of("a/b/c") == ("a", "b/c")
    assert key_of("train_loss") == ("", "train_loss")
    assert key_of("/x") == ("", "/x") and key_of("x/") == ("", "x/")
    assert tag_of("train", "loss") == "train/loss"  # a store from before: group/name
