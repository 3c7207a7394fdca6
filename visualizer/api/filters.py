"""The runs a ``filters`` dict keeps: a small subset of W&B's MongoDB-style run filters.

    {"state": "finished"}
    {"config.lr": 0.01}                      # a dotted path into the config
    {"name": {"$regex": "^lr-"}}
    {"summary.val/loss": {"$lt": 0.3}}       # a last value ("summary_metrics." as W&B)
    {"$and": [{...}, {...}]}, {"$or": [...]}, {"$nor": [...]}

A field is ``name`` (``display_name``), ``state``, ``created_at`` (the start: compared with
W&B's ISO 8601 text, ``"2026-01-31T12:00:00Z"`` or ``"2026-01-31"``, in UTC),
``config.KEY`` or ``summary.KEY`` (``summary_metrics.KEY``); a condition is a value (equal to
it) or one dict of ``$eq $ne $in $nin $gt $gte $lt $lte $regex $exists``. Anything else is
refused at once with a ValueError of one line, before any run is read. A string is the text
language of :mod:`.query` (``"lr>0.01 and seed==3"``), compiled to such a dict; text with no
comparison searches names, as the runs table's filter box does. ``order`` sorts by a field.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from snapshot_store.format.summary import RunSummary
from visualizer.patterns import is_pattern, searcher

from .points import STEP_KEY, TIMESTAMP_KEY
from .query import is_expression, parse

# What a filter looks at of a run: "name", "state", "config" and "summary".
Fields = Mapping[str, Any]
Test = Callable[[Fields], bool]
T = TypeVar("T")

MISSING = object()
ACCEPTED = (
    "fields name, state, created_at, config.KEY, summary.KEY; a value, or one of "
    "$eq $ne $in $nin $gt $gte $lt $lte $regex $exists; $and/$or/$nor of such filters"
)
_FIELDS = {"name": "name", "display_name": "name", "state": "state", "created_at": "created_at"}
_PREFIXES = {"config.": "config", "summary.": "summary", "summary_metrics.": "summary"}


def _refuse(what: object, why: str) -> ValueError:
    return ValueError(f"filter {what!r:.80}: {why}; accepted: {ACCEPTED}")


def dig(value: Any, path: str) -> Any:
    """``value[path]``, else the dotted ``path`` followed into nested dicts; MISSING if none."""
    if not isinstance(value, dict | Mapping):  # a dict first: an ABC's check is slower
        return MISSING
    if path in value:
        return value[path]
    head, dot, rest = path.partition(".")
    while dot:
        if head in value:
            found = dig(value[head], rest)
            if found is not MISSING:
                return found
        more, dot, rest = rest.partition(".")
        head = f"{head}.{more}"
    return MISSING


def _getter(field: str) -> Callable[[Fields], Any]:
    if field in _FIELDS:
        key = _FIELDS[field]
        return lambda run: run[key]
    for prefix, part in _PREFIXES.items():
        if field.startswith(prefix) and len(field) > len(prefix):
            path = field[len(prefix) :]
            return lambda run: dig(run[part], path)
    raise _refuse(field, "no such field")


def _ordered(op: str, operand: Any) -> Callable[[Any], bool]:
    compare = {
        "$gt": lambda a: a > operand,
        "$gte": lambda a: a >= operand,
        "$lt": lambda a: a < operand,
        "$lte": lambda a: a <= operand,
    }[op]

    def test(value: Any) -> bool:
        try:
            return value is not MISSING and bool(compare(value))
        except TypeError:  # a string config beside a number: not in the range
            return False

    return test


def _condition(field: str, condition: Any) -> Callable[[Any], bool]:
    """A test of one field's value: ``condition`` a value, or a dict of one operator."""
    if not (isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition)):
        return lambda value: value is not MISSING and value == condition
    if len(condition) != 1:
        raise _refuse({field: condition}, "one operator a field")
    ((op, operand),) = condition.items()
    if op == "$eq":
        return lambda value: value is not MISSING and value == operand
    if op == "$ne":
        return lambda value: value is MISSING or value != operand
    if op in ("$in", "$nin"):
        if not isinstance(operand, list | tuple | set):
            raise _refuse({field: condition}, f"{op} takes a list")
        inside = op == "$in"
        return lambda value: (value is not MISSING and value in operand) == inside
    if op in ("$gt", "$gte", "$lt", "$lte"):
        return _ordered(op, operand)
    if op == "$regex":
        if not isinstance(operand, str) or (why := is_pattern(operand)) is not None:
            why = "not a string" if not isinstance(operand, str) else why
            raise _refuse({field: condition}, f"not a regular expression ({why})")
        search = searcher(operand)
        return lambda value: isinstance(value, str) and search(value)
    if op == "$exists":
        return lambda value: (value is not MISSING) == bool(operand)
    raise _refuse({field: condition}, f"unknown operator {op}")


def summary_of(summary: RunSummary) -> dict[str, Any]:
    """W&B's ``run.summary``: each series' last value, the values the run set (text, dicts and
    lists too), ``_step``, ``_timestamp`` and ``_runtime``."""
    values: dict[str, Any] = {
        tag: stats.last for tag, stats in summary.series.items() if stats.last is not None
    }
    values.update(summary.values)
    if summary.step is not None:
        values[STEP_KEY] = summary.step
    if summary.updated is not None:
        values[TIMESTAMP_KEY] = summary.updated
    if summary.duration is not None:
        values["_runtime"] = summary.duration
    return values


def fields_of(
    summary: RunSummary,
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Fields:
    """What a filter looks at of a run: its name, state, start, config and summary; those not
    given are the ``summary``'s (its config, :func:`summary_of`)."""
    return {
        "name": summary.name if name is None else name,
        "state": summary.state,
        "created_at": summary.started,
        "config": summary.config if config is None else config,
        "summary": summary_of(summary) if values is None else values,
    }


def _sortable(value: Any) -> tuple[int, Any] | None:
    """``value`` as a sort key: numbers, then texts, then the rest by repr; None (listed last)
    when absent, None or NaN."""
    if value is MISSING or value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool | int | float):
        return 0, float(value)
    return (1, value) if isinstance(value, str) else (2, repr(value))


def sort_key(field: str) -> Callable[[Fields], tuple[int, Any] | None]:
    """A run's sort key by ``field`` (as a filter names it: ``config.lr``, ``summary.val/loss``,
    ``created_at``); None for a run without it. ValueError naming a field there is not."""
    get = _getter(field)
    return lambda run: _sortable(get(run))


def ordered(runs: Sequence[T], fields: Sequence[Fields], order: str | None) -> list[T]:
    """``runs`` (with their ``fields``) in W&B's ``order``: ``"+config.lr"`` (ascending),
    ``"-summary_metrics.val/loss"`` (descending), ``"created_at"``; runs without the field last,
    ties as given. None: as given."""
    if order is None:
        return list(runs)
    if not isinstance(order, str) or not order.lstrip("+-"):
        raise ValueError(f"order {order!r:.80}: expected +FIELD or -FIELD, a field as filters name")
    key = sort_key(order.lstrip("+-"))
    keys = [key(run) for run in fields]
    known = [(k, i) for i, k in enumerate(keys) if k is not None]
    known.sort(key=lambda pair: pair[0], reverse=order.startswith("-"))
    return [runs[i] for _k, i in known] + [runs[i] for i, k in enumerate(keys) if k is None]


def compile_filters(filters: Mapping[str, Any] | str | None) -> Test:
    """A test of a run's fields (see the module); ValueError naming a filter it can not take."""
    if filters is None:
        return lambda run: True
    if isinstance(filters, str):
        if is_expression(filters):
            return compile_filters(parse(filters))
        search = searcher(filters.strip(), ignore_case=True)
        return lambda run: search(run["name"])
    return _compiled(filters)


def _compiled(filters: object) -> Test:
    """The test of a filters dict (text is taken only whole, not inside one)."""
    if not isinstance(filters, Mapping):
        raise _refuse(filters, "filters are a dict")
    tests: list[Test] = []
    for field, condition in filters.items():
        if field in ("$and", "$or", "$nor"):
            if not isinstance(condition, list | tuple) or not condition:
                raise _refuse({field: condition}, f"{field} takes a list of filters")
            parts = [_compiled(part) for part in condition]
            tests.append(_combined(parts, field))
            continue
        if not isinstance(field, str):
            raise _refuse(field, "a field is a string")
        if field == "created_at":
            condition = _in_seconds(condition)
        tests.append(_on_field(_getter(field), _condition(field, condition)))
    return _combined(tests, "$and")


def _in_seconds(condition: Any) -> Any:
    """``created_at``'s condition with W&B's ISO 8601 texts (UTC unless they say) as Unix
    seconds, the field's own form; ValueError naming a text that is not a time."""
    if isinstance(condition, Mapping):
        return {op: _in_seconds(operand) for op, operand in condition.items()}
    if isinstance(condition, list | tuple):
        return [_in_seconds(operand) for operand in condition]
    if not isinstance(condition, str):
        return condition
    try:
        when = datetime.datetime.fromisoformat(condition)
    except ValueError:
        why = "created_at is compared with a time, e.g. '2026-01-31T12:00:00Z'"
        raise _refuse(condition, why) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def _combined(tests: list[Test], how: str) -> Test:
    """Whether every one of ``tests`` ($and), one ($or) or none ($nor) keeps a run."""
    if len(tests) == 1 and how != "$nor":
        return tests[0]  # a parsed expression nests each condition in one: 11 calls a run
    if how == "$and":
        return lambda run: all(test(run) for test in tests)
    if how == "$or":
        return lambda run: any(test(run) for test in tests)
    return lambda run: not any(test(run) for test in tests)


def _on_field(get: Callable[[Fields], Any], test: Callable[[Any], bool]) -> Test:
    return lambda run: test(get(run))
