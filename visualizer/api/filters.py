"""The runs a ``filters`` dict keeps: a small subset of W&B's MongoDB-style run filters.

    {"state": "finished"}
    {"config.lr": 0.01}                      # a dotted path into the config
    {"name": {"$regex": "^lr-"}}
    {"summary.val/loss": {"$lt": 0.3}}       # a last value ("summary_metrics." as W&B)
    {"$and": [{...}, {...}]}, {"$or": [...]}

A field is ``name`` (``display_name``), ``state``, ``config.KEY`` or ``summary.KEY``
(``summary_metrics.KEY``); a condition is a value (equal to it) or one dict of
``$eq $ne $in $nin $gt $gte $lt $lte $regex $exists``. Anything else is refused
at once with a ValueError of one line, before any run is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from visualizer.patterns import is_pattern, searcher

# What a filter looks at of a run: "name", "state", "config" and "summary".
Fields = Mapping[str, Any]
Test = Callable[[Fields], bool]

MISSING = object()
ACCEPTED = (
    "fields name, state, config.KEY, summary.KEY; a value, or one of "
    "$eq $ne $in $nin $gt $gte $lt $lte $regex $exists; $and/$or of such filters"
)
_FIELDS = {"name": "name", "display_name": "name", "state": "state"}
_PREFIXES = {"config.": "config", "summary.": "summary", "summary_metrics.": "summary"}


def _refuse(what: object, why: str) -> ValueError:
    return ValueError(f"filter {what!r:.80}: {why}; accepted: {ACCEPTED}")


def dig(value: Any, path: str) -> Any:
    """``value[path]``, else the dotted ``path`` followed into nested dicts; MISSING if none."""
    if not isinstance(value, Mapping):
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


def compile_filters(filters: Mapping[str, Any] | None) -> Test:
    """A test of a run's fields (see the module); ValueError naming a filter it can not take."""
    if filters is None:
        return lambda run: True
    if not isinstance(filters, Mapping):
        raise _refuse(filters, "filters are a dict")
    tests: list[Test] = []
    for field, condition in filters.items():
        if field in ("$and", "$or"):
            if not isinstance(condition, list | tuple) or not condition:
                raise _refuse({field: condition}, f"{field} takes a list of filters")
            parts = [compile_filters(part) for part in condition]
            tests.append(_combined(parts, every=field == "$and"))
            continue
        if not isinstance(field, str):
            raise _refuse(field, "a field is a string")
        tests.append(_on_field(_getter(field), _condition(field, condition)))
    return _combined(tests, every=True)


def _combined(tests: list[Test], every: bool) -> Test:
    if every:
        return lambda run: all(test(run) for test in tests)
    return lambda run: any(test(run) for test in tests)


def _on_field(get: Callable[[Fields], Any], test: Callable[[Any], bool]) -> Test:
    return lambda run: test(get(run))
