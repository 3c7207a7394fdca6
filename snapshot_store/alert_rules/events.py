"""The findings that are not a curve's: a run's end, a threshold held, a non-finite value.

Each is made here once, with its words and its once-per-run key, for the viewer's alert
watch and a run's writer thread alike: the key is what tells a viewer that a writer sent
an alert already (:mod:`snapshot_store.alerting.on_writer`).
"""

from __future__ import annotations

from run_core.tags import tag_of

from .judge import Finding
from .language import Threshold


def ended(state: str, step: object, session: object) -> Finding:
    """The run ended as ``state`` (failed, stopped, finished) at ``step``; each session of a
    resumed run ends on its own (``session``: its start time, the key's)."""
    verb = "was stopped" if state == "stopped" else state
    at_step = f" at step {step}" if isinstance(step, int) else ""
    return Finding(state, f"{verb}{at_step}", f"{state}@{session}")


def threshold(rule: Threshold, value: float, step: object) -> Finding:
    """``rule`` holds for the series' last ``value``, logged at ``step``."""
    detail = f"has {tag_of(*rule.key)} = {value:g} at step {step}"
    return Finding("rule", f"{detail}, and the rule is {rule}", f"rule:{rule}")


def non_finite(tag: str, value: float, step: object, exact: bool = True) -> Finding:
    """Series ``tag`` logged ``value`` (NaN or +-inf) at ``step`` (``exact``: else by then,
    as a summary tells it)."""
    where = f"at step {step}" if exact else f"(by step {step})"
    return Finding("non-finite", f"logged {tag} = {value} {where}", f"non-finite:{tag}")
