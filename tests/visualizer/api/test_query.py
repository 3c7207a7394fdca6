"""The filter text (the runs table's box, ``Api().runs(filters="...")``): what it keeps, what is
no expression (a name search), and one line for what is refused, however hostile the text."""

from __future__ import annotations

import random

import pytest

from visualizer.api.filters import compile_filters
from visualizer.api.query import MAX_FILTER_CHARS, MAX_FILTER_DEPTH, is_expression, parse

RUN = {
    "name": "lr-0.01-seed-3",
    "state": "running",
    "created_at": 1795867200.0,  # 2026-11-28T12:00:00Z
    "config": {"lr": 0.01, "seed": 3, "optimizer": "adam", "model": {"depth": 3}, "flag": True},
    "summary": {"seed": 4, "val/loss": 0.25, "note": 'say "hi"'},
}


@pytest.mark.parametrize(
    "text, kept",
    [
        ("lr>0.001 and seed==3", True),
        ("lr>0.01 and seed==3", False),
        ('optimizer=="adam"', True),
        ("optimizer='sgd'", False),
        ("optimizer=adam", True),  # a bare word is text; = is ==
        ('state=="running" or name~"^nope"', True),
        ('state=="finished" or name~"^lr-"', True),
        ('state=="finished" or name~"^LR-"', False),  # as $regex: case counts
        ("seed==4", False),  # the config's seed, though the summary has one too
        ("summary.seed==4", True),
        ("val/loss<0.3", True),  # not in the config: the summary's
        ("summary_metrics.val/loss>=0.3", False),
        ("config.model.depth>=3 and model.depth<4", True),
        ("not lr>0.001", False),
        ("not (lr>0.1 or seed!=3)", True),
        ("lr>1 or seed==3 and optimizer=='adam'", True),  # and before or
        ("(lr>1 or seed==3) and optimizer=='sgd'", False),
        ("flag==true and missing!=1", True),  # absent: not equal to anything
        ("missing<1", False),
        ("missing==null", False),
        ("lr>=1e-2 and lr<=.01 and seed>-1", True),
        ('created_at>"2026-11-01"', True),
        ('created_at<"2026-11-28T11:59"', False),
        (r'note=="say \"hi\""', True),
        (r'name~"seed-\d$"', True),  # an escape other than a quote's is kept for the regex
        ("LR>0.001 AND seed==3", False),  # keys are as logged; and/or/not in any case
    ],
)
def test_each_expression_keeps_the_runs_it_names(text, kept):
    assert is_expression(text)
    assert compile_filters(text)(RUN) is kept


@pytest.mark.parametrize(
    "text, name, kept",
    [
        ("lr-0.1", "sweep-LR-0.1", True),
        ("^run-01", "run-0123", True),
        ("^run-01", "a-run-01", False),
        ("(?=x)", "a (?=x) b", True),  # no regex RE2 takes: plain text
        ("a|b", "B", True),
        ("seed 3", "seed 3", True),
        ("", "anything", True),
    ],
)
def test_text_with_no_comparison_is_a_name_search_any_case(text, name, kept):
    assert not is_expression(text)
    assert compile_filters(text)({**RUN, "name": name}) is kept


def test_the_text_compiles_to_the_dict_form_the_api_documents():
    assert parse('state=="running" or name~"^lr-"') == {
        "$or": [{"state": {"$eq": "running"}}, {"name": {"$regex": "^lr-"}}]
    }
    assert parse("not config.lr<0.1") == {"$nor": [{"config.lr": {"$lt": 0.1}}]}
    bare = parse("lr>0.01")["$or"]
    assert bare[0] == {"$and": [{"config.lr": {"$exists": True}}, {"config.lr": {"$gt": 0.01}}]}
    assert bare[1] == {"$and": [{"config.lr": {"$exists": False}}, {"summary.lr": {"$gt": 0.01}}]}


@pytest.mark.parametrize(
    "text, named",
    [
        ("lr>", "expected a value at the end"),
        ("lr>0.1 and", "expected a key at the end"),
        ("(lr>1", "expected )"),
        ("lr>1)", "expected and, or or the end at ')'"),
        ("lr>1 seed==3", "expected and, or or the end at 'seed'"),
        ("lr~3", "~ takes a text value"),
        ('name~"("', "not a regular expression"),
        ("lr>0.1 & seed==3", "'&' (character 8) starts no key"),
        ("lr>1 and ==3", "expected a key at '=='"),
        ("lr>>3", "expected a value at '>'"),
        ("x" * (MAX_FILTER_CHARS + 1) + "==1", f"longer than {MAX_FILTER_CHARS}"),
        (
            "(" * (MAX_FILTER_DEPTH + 1) + "a==1" + ")" * (MAX_FILTER_DEPTH + 1),
            f"more than {MAX_FILTER_DEPTH} deep",
        ),
    ],
)
def test_a_bad_expression_is_one_line_naming_what_is_wrong_and_the_grammar(text, named):
    with pytest.raises(ValueError) as caught:
        compile_filters(text)
    message = str(caught.value)
    assert named in message and "accepted:" in message and "\n" not in message
    assert len(message) < 700


@pytest.mark.parametrize(
    "text",
    [
        "(" * 100_000 + "a==1" + ")" * 100_000,
        "not " * 100_000 + "a==1",
        "a==1 and " * 200_000 + "a==1",
        '"' * 1_000_000,
        "a==\n1 or\tb ==\r\n'x\ny'",
    ],
)
def test_deep_and_huge_text_is_refused_or_taken_in_bounded_work(text):
    try:
        test = compile_filters(text)
    except ValueError as err:
        assert "\n" not in str(err) and len(str(err)) < 700
    else:
        test(RUN)


def test_random_token_soup_is_taken_or_refused_in_one_line_never_otherwise():
    rng = random.Random(48)
    pieces = ["lr", "seed", "name", "state", "config.lr", "summary.x", "and", "or", "not"]
    pieces += ["(", ")", "==", "!=", "<", "<=", ">", ">=", "=", "~", "1", "-2.5e3", "'a'"]
    pieces += ['"^l"', "true", "null", " ", "\\", '"', "'", "é", "\x00"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        try:
            test = compile_filters(text)
        except ValueError as err:
            assert "\n" not in str(err), text
            continue
        assert test(RUN) in (True, False), text
