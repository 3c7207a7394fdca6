"""Alert rules judged on a run's writer thread, for a box where no viewer runs.

The writer thread hands each round's new points (:meth:`WriterAlerts.points`), each
status write (:meth:`WriterAlerts.status`: a stall) and the run's end
(:meth:`WriterAlerts.ended`) to the same judges the viewer runs
(:mod:`snapshot_store.alert_rules`), never the training thread. A finding goes out
through the viewer's delivery code (:mod:`.delivery`: its own threads, retries and
deadline); once every destination delivered it, it is recorded in the run's status
(:mod:`.sent`), so a viewer opened later does not send it again, and a resumed run
does not either. Rules judged against a baseline run are the viewer's (it reads both).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from run_core.tags import tag_of
from snapshot_store.alert_rules import events
from snapshot_store.alert_rules.judge import Finding, RunJudge
from snapshot_store.alert_rules.language import BASELINE_KINDS, CurveRule, Rule, Threshold
from snapshot_store.alert_rules.language import parse_rule as parse_rule

from .alert import Alert
from .delivery import CLOSE_TIMEOUT_S, AlertSender
from .webhook import check_webhook

if TYPE_CHECKING:
    from snapshot_store.write.documents import RunDocuments

log = logging.getLogger(__name__)

AlertCommand = Callable[[dict[str, Any]], object]  # an --alert-cmd plugin, resolved


@dataclass(frozen=True)
class AlertSettings:
    """What a run's writer judges and where it sends what it finds.

    ``rules``: thresholds and curve rules (``parse_rule``'s), none against a baseline;
    ``webhook``: a URL that is POSTed each alert; ``command``: a plugin called with each
    alert's dict (``command_name``: how its errors name it). The writer also sends the
    run's end and a series' first non-finite value, as the viewer does.
    """

    rules: tuple[Rule, ...] = ()
    webhook: str | None = None
    command: AlertCommand | None = None
    command_name: str = "alert_cmd"
    close_timeout: float = CLOSE_TIMEOUT_S

    def __post_init__(self) -> None:
        against = [r for r in self.rules if isinstance(r, CurveRule) and r.kind in BASELINE_KINDS]
        if against:
            raise ValueError(
                f"alert rule {str(against[0])!r} judges against a baseline run, which a run's "
                "writer does not read: give it to the viewer (--baseline RUN --alert-rule ...)"
            )
        if self.webhook is None and self.command is None:
            raise ValueError(
                "alert rules need somewhere to send alerts: a webhook URL "
                "(--alert-webhook, alert_webhook=, or $ALERT_WEBHOOK_URL) or an --alert-cmd"
            )
        if self.webhook is not None:
            check_webhook(self.webhook)


def alert_settings(
    rules: Iterable[str | Rule] = (),
    webhook: str | None = None,
    command: AlertCommand | None = None,
    command_name: str = "alert_cmd",
) -> AlertSettings | None:
    """Settings from rule texts (or rules) and destinations; None when none is asked for.
    ValueError in one line for a rule that does not parse or settings that can not work."""
    parsed = tuple(parse_rule(r) if isinstance(r, str) else r for r in rules)
    if not parsed and webhook is None and command is None:
        return None
    return AlertSettings(parsed, webhook, command, command_name)


class _StatusWriter(Protocol):
    def rewrite_status(self) -> None: ...


class WriterAlerts:
    """One run's judges and senders, run on its writer thread.

    ``sent_before``: the keys its status says were sent (a resumed run's);
    ``record``: called with each alert every destination delivered (on a sender's thread).
    """

    def __init__(
        self,
        settings: AlertSettings,
        run: str,
        sent_before: Iterable[str],
        record: Callable[[Alert], None],
    ) -> None:
        self.settings, self.run = settings, run
        curves = [r for r in settings.rules if isinstance(r, CurveRule)]
        self.thresholds = [r for r in settings.rules if isinstance(r, Threshold)]
        self.judge = RunJudge(curves)
        self.fired = set(sent_before)  # keys found (and sent, or being sent): never again
        self.sender = AlertSender(record)
        if settings.command is not None:
            self.sender.add_plugin(settings.command_name, settings.command)
        if settings.webhook is not None:
            self.sender.add_webhook(settings.webhook)

    @classmethod
    def of_run(cls, settings: AlertSettings, documents: RunDocuments) -> WriterAlerts:
        """The alerts of the run whose documents are ``documents`` (its sent ones kept there)."""
        sent = (record["key"] for record in documents.alerts_sent)
        return cls(settings, documents.name, sent, documents.alert_sent)

    def points(self, columns: Sequence[tuple[Any, ...]]) -> None:
        """Judge a round's new points: ``(group, name, steps, epochs, times, values)`` each."""
        found: list[Finding] = []
        wanted = self.judge.tags
        for group, name, steps, _, times, values in columns:
            tag = tag_of(group, name)
            y = np.asarray(values, dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(y))
            if len(bad):
                found.append(events.non_finite(tag, float(y[bad[0]]), steps[int(bad[0])]))
            for rule in self.thresholds:
                if rule.key == (group, name) and math.isfinite(y[-1]) and rule.holds(float(y[-1])):
                    found.append(events.threshold(rule, float(y[-1]), steps[-1]))
            if tag in wanted:
                found += self.judge.points(tag, _steps(steps), y, np.asarray(times, np.float64))
        self._send(found, time.time())

    def status(self, status: Mapping[str, Any], now: float) -> None:
        """Judge the status just written (a stall: the step unmoved while this thread beats)."""
        self._send(self.judge.status(status, now), now)

    def ended(self, state: str, step: int | None, session: float) -> None:
        """The run ends as ``state`` (its writer's last round)."""
        self._send([events.ended(state, step, session)], time.time())

    def close(self) -> None:
        """Deliver what is queued, for at most the settings' ``close_timeout`` seconds."""
        self.sender.close(self.settings.close_timeout)

    def finish(self, documents: RunDocuments, failed: bool, writer: _StatusWriter) -> None:
        """At the recorder's close, the writer thread done: deliver what is queued (a failed
        run's end too: its thread ended before it could judge it), then record it in status."""
        if failed:
            self.ended("failed", documents.step, documents.session_started)
        self.close()
        if documents.unsaved:
            try:
                writer.rewrite_status()
            except Exception as err:  # closing goes on: the alerts were delivered
                log.warning(
                    "could not record the alerts sent in %s: %s", documents.status_path, err
                )

    def _send(self, found: Iterable[Finding], now: float) -> None:
        for finding in found:
            if finding.key in self.fired:
                continue
            self.fired.add(finding.key)
            alert = Alert(self.run, finding.event, finding.detail, "", finding.key, now)
            log.info("alert: %s", alert.text)
            self.sender.send(alert)


def _steps(steps: Sequence[int]) -> np.ndarray:
    """A column's steps as int64 (as floats where a step is past int64: stored as lists)."""
    try:
        return np.asarray(steps, dtype=np.int64)
    except OverflowError:
        return np.asarray(steps, dtype=np.float64)
