"""Grouping compared runs that differ only by one config key (``--group-by``, ``seed`` by default).

A run's config is its stored options (``meta["options"]``) and hparams. Runs
whose configs are equal but for the key form a group, drawn in each comparison
window as one curve: the mean over its runs with their min-max band
(:mod:`visualizer.model.bands`), as W&B and Aim draw a group. A group of one
run, and a run that stored no config, are drawn as the run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from visualizer.model.bands import band, mean_series
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.summary import run_config

from .display import run_start
from .hparams import options_text
from .plotmessage import Line

DEFAULT_GROUP_BY = "seed"


def parse_group_by(text: str) -> str:
    """A config key to group runs by ("" turns grouping off); ValueError when it can not be one."""
    key = text.strip()
    if key != text or not text.isprintable():
        raise ValueError(
            f"{text!r} is not a config key: no spaces around it nor control characters "
            "(e.g. seed; '' turns grouping off)"
        )
    return key


@dataclass(frozen=True)
class Group:
    """Runs drawn as one curve, by name (sorted); ``label`` names it in legends and tables."""

    label: str
    runs: tuple[str, ...]


def _identity(config: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    """What runs of one group share: every config value but ``key``'s, as text."""
    return tuple(sorted((k, repr(v)) for k, v in config.items() if k != key))


def varying_keys(configs: Sequence[dict[str, Any]]) -> list[str]:
    """The config keys whose values differ between ``configs`` (a key some lack differs too)."""
    keys = sorted({k for config in configs for k in config})
    missing = object()
    return [k for k in keys if len({repr(c.get(k, missing)) for c in configs}) > 1]


_NO_KEY = "\x00no key"  # what a run without the grouping key holds there


def group_runs(runs: Sequence[RunData], key: str) -> list[Group]:
    """``runs`` in groups by every config value but ``key``'s, where ``key``'s values differ
    within the group; no key: a group per run."""
    configs = {run.name: run_config(run) for run in sorted(runs, key=lambda r: r.name)}
    found: dict[object, list[str]] = {}
    for name, config in configs.items():
        alone = not key or not config  # a run without a config is like no other
        found.setdefault(name if alone else _identity(config, key), []).append(name)
    named = varying_keys(list(configs.values()))
    groups, labels = [], set(configs)
    for members in found.values():
        # Seeds of one config differ in the key (or lack it); runs that all hold the same
        # value of it are alike in every way, not its replicas: each keeps its own curve.
        seeds = {repr(configs[name].get(key, _NO_KEY)) for name in members}
        if len(members) == 1 or (len(seeds) == 1 and seeds != {repr(_NO_KEY)}):
            groups += [Group(name, (name,)) for name in members]
            continue
        shared = options_text({k: configs[members[0]].get(k, "-") for k in named if k != key})
        base = ", ".join(f"{k}={v}" for k, v in shared.items()) or "every run"
        label = f"{base} ({len(members)} runs)"
        while label in labels:  # a run or another group already named so: still one trace each
            label += "'"
        labels.add(label)
        groups.append(Group(label, tuple(members)))
    order = [k for k in named if k != key]
    return sorted(groups, key=lambda g: _config_rank(configs[g.runs[0]], order, g.label))


def _config_rank(config: dict[str, Any], keys: list[str], label: str) -> tuple[Any, ...]:
    """Where a group stands in legends and colors: by its values of ``keys`` in turn, numbers
    by value (``lr=0.0001`` before ``lr=0.001`` and ``lr=0.01``), texts after them, a value
    it lacks last; then by its label."""
    ranks: list[tuple[int, float, str]] = []
    for key in keys:
        value = config.get(key, _NO_KEY)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if value is _NO_KEY or (number and math.isnan(value)):
            ranks.append((2, 0.0, ""))
        else:
            ranks.append((0, float(value), "") if number else (1, 0.0, repr(value)))
    return (not config, *ranks, label)


def group_line(runs: Sequence[RunData], lines: dict[str, Line], version: int) -> Line:
    """The curve of a group whose runs drew ``lines`` (by run name) in one window.

    ``version`` counts the curve's recomputations: as its mean series' rewinds, it
    tells the window and its smoother that earlier points changed.
    """
    origins = [run_start(run) for run in runs if run.name in lines]
    members = [lines[run.name] for run in runs if run.name in lines]
    known = [o for o in origins if o is not None]
    origin = min(known) if known else None
    shifts = [o - origin if o is not None and origin is not None else 0.0 for o in origins]
    curve = band([line.series for line in members], shifts)
    mean = mean_series(curve)
    mean.rewinds = version
    return Line(mean, origin, (curve.low, curve.high))


def member_key(lines: Sequence[Line]) -> tuple[tuple[int, int], ...]:
    """What a group's curve is made of: its runs' points and rewinds (a new one recomputes it)."""
    return tuple((len(line.series), line.series.rewinds) for line in lines)


class GroupCurves:
    """The group curves of every comparison window, recomputed only when one of their runs
    changed (a curve costs a pass over every point of its runs)."""

    def __init__(self) -> None:
        # (series, group label) -> (what it was made of, its version, the curve)
        self._made: dict[tuple[SeriesKey, str], tuple[object, int, Line]] = {}

    def lines(
        self,
        windows: dict[SeriesKey, dict[str, Line]],
        groups: Sequence[Group],
        runs: dict[str, RunData],
    ) -> dict[SeriesKey, dict[str, Line]]:
        """``windows`` (series -> run name -> line) with each group's runs as one curve."""
        made: dict[tuple[SeriesKey, str], tuple[object, int, Line]] = {}
        out: dict[SeriesKey, dict[str, Line]] = {}
        for key, by_run in windows.items():
            lines = out[key] = {}
            for group in groups:
                present = [name for name in group.runs if name in by_run]
                if len(group.runs) == 1 and present:
                    lines[group.label] = by_run[present[0]]
                elif present:
                    lines[group.label] = self._curve(key, group.label, present, by_run, runs, made)
        self._made = made  # curves of groups or windows gone are let go
        return out

    def _curve(
        self,
        key: SeriesKey,
        label: str,
        present: list[str],
        by_run: dict[str, Line],
        runs: dict[str, RunData],
        made: dict[tuple[SeriesKey, str], tuple[object, int, Line]],
    ) -> Line:
        parts = (tuple(present), member_key([by_run[name] for name in present]))
        old = self._made.get((key, label))
        if old is not None and old[0] == parts:
            made[key, label] = old
            return old[2]
        version = old[1] + 1 if old is not None else 0
        line = group_line([runs[name] for name in present], by_run, version)
        made[key, label] = (parts, version, line)
        return line
