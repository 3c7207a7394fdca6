"""The rule language: thresholds as before, curve kinds with defaults, one-line refusals."""

from __future__ import annotations

import pytest

from snapshot_store.alert_rules.language import KINDS, CurveRule, Threshold, parse_rule


@pytest.mark.parametrize(
    ("text", "kind", "tag", "given"),
    [
        ("diverging:train/loss", "diverging", "train/loss", {}),
        ("plateau:val/loss:steps=500", "plateau", "val/loss", {"steps": 500}),
        ("spike:train/loss:k=6", "spike", "train/loss", {"k": 6}),
        ("stall:minutes=10", "stall", None, {"minutes": 10}),
        ("stall", "stall", None, {}),
        ("slower:samples_per_s:pct=20", "slower", "samples_per_s", {"pct": 20}),
        ("worse:val/acc:margin=0.02,points=10", "worse", "val/acc", {"margin": 0.02, "points": 10}),
        (" Diverging : loss ", "diverging", "loss", {}),
    ],
)
def test_a_curve_rule_names_its_kind_series_and_what_it_changes(text, kind, tag, given):
    rule = parse_rule(text)
    assert isinstance(rule, CurveRule)
    assert (rule.kind, rule.tag, dict(rule.given)) == (kind, tag, given)
    for name, default in KINDS[kind].items():
        assert rule.param(name) == given.get(name, default)
    assert parse_rule(str(rule)) == rule  # its text is its identity (the alert's key)


def test_a_threshold_is_what_it_was():
    rule = parse_rule("val/loss>2.5")
    assert isinstance(rule, Threshold) and rule.kind == "rule"
    assert (rule.key, str(rule), rule.holds(2.6), rule.holds(2.5)) == (
        ("val", "loss"), "val/loss>2.5", True, False)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("diverging", "diverging needs a series"),
        ("plateau:val/loss:steps=x", "steps='x' is not a number"),
        ("spike:loss:q=3", "'q=3' is not one of spike's key=value (k, window"),
        ("spike:loss:k=-1", "k='-1' is not a number, 0 or more"),
        ("worse:a:b:c", "too many ':' parts"),
        ("trend:loss", "with a kind of diverging, plateau, spike, stall, slower, worse"),
    ],
)
def test_a_bad_rule_says_in_one_line_what_is_wrong(text, says):
    with pytest.raises(ValueError, match="e\\.g\\.") as err:
        parse_rule(text)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "series", "holds", "fails"),
    [
        ("val/loss>2.5", ("val", "loss"), 2.6, 2.5),
        (" val/loss >= 2.5 ", ("val", "loss"), 2.5, 2.4),
        ("train/acc<0.1", ("train", "acc"), 0.05, 0.1),
        ("Loss/train/total<=1e-3", ("Loss", "train/total"), 1e-3, 2e-3),
        ("loss>2", ("", "loss"), 2.5, 2.0),
        ("lr/lr==0", ("lr", "lr"), 0.0, 0.1),
        ("lr/lr!=0.1", ("lr", "lr"), 0.2, 0.1),
    ],
)
def test_a_rule_compares_a_series_last_value(text, series, holds, fails):
    rule = parse_rule(text)
    assert rule.key == series and rule.holds(holds) and not rule.holds(fails)


@pytest.mark.parametrize("text", ["val/loss", "val/loss>", ">2", "val/loss>nan", "val/loss=>2"])
def test_a_bad_rule_says_what_a_rule_is(text):
    with pytest.raises(ValueError, match=r"e\.g\. (')?val/loss"):
        parse_rule(text)
