"""Alerts: telling a person when a run needs them, once per event.

Events, per run (one not read whole is judged by its status' summary): it
**failed**, was **stopped** or **finished** (its status document's state); it
went **silent** (running, but no value logged for
``--alert-silent-after`` minutes: a killed trainer and a hung one alike); a
series logged a **non-finite** value (NaN, +/-inf); a **rule** on a series'
last value holds (``--alert-rule 'val/loss>2.5'``); a curve rule holds
(``--alert-rule diverging:train/loss``, :mod:`snapshot_store.alert_rules`; its
event is its kind's name).

Each event fires once; a run's end once per session (a resumed run's end
alerts again: the key is its status' ``session_start``). What was sent is remembered per run in a small JSON file
in the user's state dir (:mod:`visualizer.userdirs`), one per followed root,
so a restarted visualizer does not send it again. A run that had already ended
before this visualizer started, and that no visualizer told about before, is
history, not news: its events are remembered without an alert.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from run_core.tags import tag_of
from snapshot_store.alert_rules import events
from snapshot_store.alert_rules.judge import Finding
from snapshot_store.alert_rules.language import CurveRule, Rule, Threshold
from snapshot_store.alerting.alert import Alert
from snapshot_store.alerting.sent import sent_keys
from snapshot_store.format.frames import ENDED_STATES
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.status import format_duration, last_activity
from visualizer.model.summary import SeriesStats
from visualizer.userdirs import source_state_file, write_if_changed

from .curves import BaselineRun, CurveWatch

log = logging.getLogger(__name__)

DEFAULT_SILENT_AFTER_MINUTES = 10.0


class AlertMemory:
    """Which alerts were sent, per run; kept in one JSON file per followed root."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source
        self._lock = threading.Lock()
        self._saving = threading.Lock()
        self._runs: dict[str, set[str]] = {}
        self._unsaved = False
        try:
            saved = json.loads(path.read_text())
            self._runs = {run: set(keys) for run, keys in saved["runs"].items()}
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning(
                "alerts sent before can not be read from %s (%s): starting afresh", path, err
            )

    @classmethod
    def for_source(cls, source: str) -> AlertMemory:
        """The memory of the runs at ``source`` (a directory or an s3:// URL), in the state dir."""
        return cls(source_state_file("alerts", source), source)

    def knows(self, run: str) -> bool:
        """Whether ``run`` was seen by a visualizer sending alerts before."""
        with self._lock:
            return run in self._runs

    def sent(self, run: str, key: str) -> bool:
        """Whether the event ``key`` of ``run`` was sent."""
        with self._lock:
            return key in self._runs.get(run, ())

    def delivered(self, alert: Alert) -> None:
        """Record ``alert`` as sent (every destination delivered it); on disk at the next
        :meth:`save` (the follow loop's next pass, or the close): 10,000 alerts delivered at
        once wrote the whole file 10,000 times, holding up the loop's every look here."""
        self.remember(alert.run, [alert.key], save=False)

    def remember(self, run: str, keys: Iterable[str] = (), save: bool = True) -> None:
        """Record ``run`` as seen and ``keys`` as sent; on disk at once, or with ``save=False``
        at the next :meth:`save` (a pass over 10,000 new runs writes the file once, not
        10,000 times: each write is the whole file)."""
        with self._lock:
            self._runs.setdefault(run, set()).update(keys)
            self._unsaved = True
        if save:
            self.save()

    def save(self) -> None:
        """Write what is remembered, when it changed since the last write (one writer at a
        time; the others look up and remember meanwhile)."""
        with self._saving:
            with self._lock:
                if not self._unsaved:
                    return
                self._unsaved = False
                runs = {name: sorted(sent) for name, sent in sorted(self._runs.items())}
            document = {"source": self.source, "runs": runs}
            try:
                write_if_changed(self.path, json.dumps(document, indent=1).encode())
            except OSError as err:  # a full or read-only home: alerts still go out
                log.warning("can not record sent alerts in %s: %s", self.path, err)


class AlertWatch:
    """Finds each run's events on every pass of the follow loop and hands new ones to ``send``."""

    def __init__(
        self,
        memory: AlertMemory,
        send: Callable[[Alert], None],
        rules: Iterable[Rule] = (),
        silent_after: float | None = DEFAULT_SILENT_AFTER_MINUTES * 60,
        baseline: BaselineRun | None = None,
    ) -> None:
        self.memory, self.send = memory, send
        given = list(rules)
        self.rules = [rule for rule in given if isinstance(rule, Threshold)]
        self.curves = CurveWatch([rule for rule in given if isinstance(rule, CurveRule)], baseline)
        self.silent_after = silent_after  # seconds; None: never
        self.started = time.time()
        self._fired: set[tuple[str, str]] = set()
        # (run, series) -> (points checked for non-finite values, the series' rewinds then)
        self._checked: dict[tuple[str, SeriesKey], tuple[int, int]] = {}

    def check(
        self,
        runs: Iterable[tuple[RunData, str]],
        now: float,
        summary_of: Callable[[str], Mapping[str, SeriesStats] | None] = lambda name: None,
    ) -> None:
        """Send each new event of ``runs``, given as (data, page URL) pairs. A run whose series
        are not read (not followed) is judged by ``summary_of(name)``, its summary's series
        (tag -> stats), where it has one."""
        history: list[str] = []
        for run, url in runs:
            summary = summary_of(run.name) if not run.series else None
            alerts = [
                a
                for a in self._events(run, url, now, summary)
                if (run.name, a.key) not in self._fired
            ]
            if not self.memory.knows(run.name):
                if self._ended_before_start(run):
                    history.append(run.name)
                    self.memory.remember(run.name, (a.key for a in alerts), save=False)
                    continue
                self.memory.remember(run.name, save=False)
            by_writer = sent_keys(run.status) if alerts else set()
            for alert in alerts:
                self._fired.add((run.name, alert.key))
                if alert.key in by_writer:  # the run's own writer judged it, and sent it
                    if not self.memory.sent(run.name, alert.key):
                        log.info("alert %r of run %r: sent by its writer", alert.event, run.name)
                        self.memory.remember(run.name, [alert.key], save=False)
                elif not self.memory.sent(run.name, alert.key):
                    log.info("alert: %s", alert.text)
                    self.send(alert)
        if history:  # one line, not one a run: yesterday's sweep may be 10,000 runs
            shown = ", ".join(map(repr, history[:3])) + (", ..." if len(history) > 3 else "")
            log.info("%d runs had ended before alerts watched them: no alert (%s)",
                     len(history), shown)  # fmt: skip
        self.memory.save()

    def _ended_before_start(self, run: RunData) -> bool:
        status = run.status or {}
        updated = status.get("updated")
        return (
            status.get("state") in ENDED_STATES
            and isinstance(updated, int | float)
            and updated < self.started
        )

    def _events(
        self, run: RunData, url: str, now: float, summary: Mapping[str, SeriesStats] | None
    ) -> Iterator[Alert]:
        status = run.status or {}
        state, step = status.get("state"), status.get("step")
        found: list[Finding] = []
        if state in ENDED_STATES:
            found.append(events.ended(str(state), step, session_start(status)))
        elif state == "running" and self.silent_after is not None:
            last = last_activity(status)
            if last is not None and now - last >= self.silent_after:
                quiet = format_duration(now - last)
                since = f", since step {step}" if isinstance(step, int) else ""
                detail = f"has logged nothing for {quiet}{since}"
                found.append(Finding("silent", detail, f"silent@{last}"))
        found += self._non_finite(run) if summary is None else _non_finite_summed(summary)
        for rule in self.rules:
            last_value = _last_value(run, summary, rule.key)
            if last_value is not None and np.isfinite(last_value[0]) and rule.holds(last_value[0]):
                found.append(events.threshold(rule, *last_value))
        found += self.curves.findings(run, now)
        for finding in found:
            yield Alert(run.name, finding.event, finding.detail, url, finding.key, now)

    def _non_finite(self, run: RunData) -> Iterator[Finding]:
        """The first non-finite value of each series, looking only at points not checked yet."""
        for key, series in run.series.items():
            checked, rewinds = self._checked.get((run.name, key), (0, series.rewinds))
            start = checked if rewinds == series.rewinds else 0  # merged points: check all again
            self._checked[(run.name, key)] = (len(series), series.rewinds)
            if start >= len(series):
                continue
            bad = np.flatnonzero(~np.isfinite(series.values(start)))
            if len(bad):
                index = start + int(bad[0])
                value = float(series.values(index, index + 1)[0])
                yield events.non_finite(tag_of(*key), value, series.step_at(index))


def _last_value(
    run: RunData, summary: Mapping[str, SeriesStats] | None, key: SeriesKey
) -> tuple[float, int | None] | None:
    """A series' last value and step: from its points when read, else from the run's summary."""
    if summary is not None:
        stats = summary.get(tag_of(*key))
        return None if stats is None or stats.last is None else (stats.last, stats.step)
    series = run.series.get(key)
    if series is None or not len(series):
        return None
    return float(series.values(len(series) - 1)[0]), series.step_at(-1)


def _non_finite_summed(summary: Mapping[str, SeriesStats]) -> Iterator[Finding]:
    """A non-finite value a summary shows: the last value, or an infinite extreme (a NaN
    between finite values leaves no trace there; a followed run's points are each checked)."""
    for name, stats in summary.items():
        bad = next(
            (v for v in (stats.last, stats.min, stats.max) if v is not None and not np.isfinite(v)),
            None,
        )
        if bad is not None:
            yield events.non_finite(name, bad, stats.step, exact=False)


def session_start(status: Mapping[str, Any]) -> Any:
    """When the session that ended began, the key of its alert: each session of a resumed run
    ends on its own; a first session's start is the run's (a status without ``session_start``,
    as stores wrote before they said it, or one held without it where it is the start)."""
    return status.get("session_start", status.get("start_time"))
