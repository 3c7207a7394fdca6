"""The checks of run options: each takes a value and says what is wrong with it, or None.

:mod:`.config` names one for each field it checks; the same check runs for ``trainer
train``, ``trainer launch`` and :func:`trainer.fit`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from snapshot_store.alert_rules.language import parse_rule

Check = Callable[[Any], str | None]  # returns what is wrong, or None


def at_least(low: float) -> Check:
    """A number that is finite and >= ``low``."""

    def check(value: Any) -> str | None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return "must be a number"
        if not math.isfinite(value) or value < low:
            return f"must be a finite number >= {low:g}"
        return None

    return check


def above(low: float) -> Check:
    """A number that is finite and > ``low``."""

    def check(value: Any) -> str | None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return "must be a number"
        if not math.isfinite(value) or value <= low:
            return f"must be a finite number > {low:g}"
        return None

    return check


def whole_number(value: Any) -> str | None:
    """None or an int: a count, a size or an interval in steps (``fit(batch_size=2.5)``)."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return None
    return "must be a whole number"


def one_of(*choices: str) -> Check:
    """One of ``choices``."""

    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}"

    return check


def plain_name(value: Any) -> str | None:
    """A run name usable as one directory name."""
    if not isinstance(value, str) or value in ("", ".", "..") or "/" in value or "\\" in value:
        return "must be a plain directory name (no '/', not '.' or '..')"
    return None


def server_without_login(value: Any) -> str | None:
    """A visdom host or ``http://host[:port]`` without ``user:password@`` (it would be logged)."""
    if not isinstance(value, str) or not value.strip():
        return "must be a host or http://host[:port]"
    if "@" in urlsplit(value if "://" in value else f"http://{value}").netloc:
        return "carries a login: set VISDOM_USERNAME and VISDOM_PASSWORD instead"
    return None


def visdom_env_name(value: Any) -> str | None:
    """None (the run's name) or a visdom env name that a URL shows as it is."""
    if value is None or (isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.-]+", value)):
        return None
    return "must be letters, digits, '_', '-' or '.'"


def gpu_ids(value: Any) -> str | None:
    """None (automatic), ``(-1,)`` for the CPU, or distinct GPU ids."""
    if value is None:
        return None
    ids = list(value)
    if any(not isinstance(i, int) or i < -1 for i in ids):
        return "ids are 0 or more, or -1 for the CPU"
    if -1 in ids and len(ids) > 1:
        return "-1 (CPU) can not be mixed with GPU ids"
    if len(set(ids)) != len(ids):
        return "an id is repeated"
    return None


def alert_rules(value: Any) -> str | None:
    """Rules as ``--alert-rule`` writes them (a threshold, or KIND:SERIES[:key=value,...])."""
    if not isinstance(value, tuple | list) or not all(isinstance(r, str) for r in value):
        return "must be a list of rule texts, e.g. ['diverging:train/loss']"
    for text in value:
        try:
            parse_rule(text)
        except ValueError as err:
            return str(err)
    return None
