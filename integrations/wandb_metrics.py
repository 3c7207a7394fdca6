"""W&B's ``define_metric(name, summary=...)``: which summary a logged key keeps.

Measured against W&B 0.31 offline (its run files): the kinds are ``min``, ``max``,
``mean``, ``last``, ``first``, ``copy`` (the last value, plain) and ``none`` (no summary);
a second ``define_metric`` of a name adds its kinds to the first's (``min`` then ``max``
keeps ``{max, min}``), ``none`` given later removes them and a kind given after ``none``
replaces it, ``overwrite=True`` replaces them all, and a call without ``summary`` changes
nothing. A key's exact name wins over a glob (``train/*``: W&B takes a ``*`` only as
the last character); ``copy`` beside another kind is dropped, as W&B drops it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .wandb_config import Error

SUMMARY_KINDS = ("min", "max", "mean", "last", "first", "copy", "none")  # W&B 0.31's, no more
_FOLD: dict[str, Callable[[float, float], float]] = {
    "min": min,
    "max": max,
    "last": lambda old, new: new,
    "first": lambda old, new: old,
}


class Metrics:
    """The summary kinds each defined name or glob asks for, and the summaries they keep."""

    def __init__(self) -> None:
        self._kinds: dict[str, list[str]] = {}  # by name or glob, in definition order
        self._means: dict[str, tuple[float, int]] = {}  # key -> (sum, count) for "mean"

    def define(self, name: str, summary: str | None, overwrite: bool | None = None) -> None:
        """Add ``summary``'s kinds (comma-separated) to ``name``'s; W&B's errors for a kind
        or a glob W&B refuses."""
        if not name:
            raise Error("define_metric() requires non-empty name argument")
        if "*" in name[:-1]:
            raise Error(f"Unhandled define_metric() arg: name (glob suffixes only): {name}")
        kinds = [kind.strip().lower() for kind in summary.split(",")] if summary else []
        for kind in kinds:
            if kind not in SUMMARY_KINDS:
                raise Error(f"Unhandled define_metric() arg: summary op: {kind}")
        old = self._kinds.get(name, [])
        if overwrite or "none" in kinds:
            merged = kinds
        else:
            merged = [kind for kind in old if kind != "none"]
            merged += [kind for kind in kinds if kind not in merged]
        self._kinds[name] = merged

    def kinds_for(self, key: str) -> list[str] | None:
        """The kinds ``key`` keeps: its name's, else the first glob's matching it; None when
        no definition names it (the summary keeps its last value)."""
        kinds = self._kinds.get(key)
        if kinds is not None:
            return kinds
        return next(
            (
                kinds
                for pattern, kinds in self._kinds.items()
                if pattern.endswith("*") and key.startswith(pattern[:-1])
            ),
            None,
        )

    def summarize(self, key: str, kinds: list[str], old: Any, new: float) -> Any:
        """The summary of ``key`` after ``new`` (a number) is logged: ``{kind: value}`` for
        the kinds asked, the value itself for none or ``copy`` alone."""
        asked = [kind for kind in kinds if kind != "copy"]
        if not asked:
            return new
        old = old if isinstance(old, dict) else {}
        if "mean" in asked:
            total, count = self._means.get(key, (0.0, 0))
            self._means[key] = (total + new, count + 1)
        summary = {}
        for kind in asked:
            if kind == "mean":
                total, count = self._means[key]
                summary[kind] = total / count
            else:
                summary[kind] = new if kind not in old else _FOLD[kind](old[kind], new)
        return summary
