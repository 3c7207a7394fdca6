"""The follow command's alert options, checked at start, and the alerts they turn on."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from snapshot_store.alert_rules.language import BASELINE_KINDS, KINDS, Rule, parse_rule
from snapshot_store.alerting.delivery import CLOSE_TIMEOUT_S, AlertSender, check_plugin
from snapshot_store.alerting.webhook import (
    NTFY_EXAMPLE,
    WEBHOOK_VAR,
    check_webhook,
    webhook_from_environment,
)
from snapshot_store.format.frames import ENDED_STATES
from transfer_plugins.hooks import TransferSpecError, resolve_callable
from visualizer.follower import Follower
from visualizer.model.rundata import RunData
from visualizer.model.summary import SeriesStats

from .rules import DEFAULT_SILENT_AFTER_MINUTES, AlertMemory, AlertWatch

log = logging.getLogger(__name__)


def _rule(text: str) -> Rule:
    try:
        return parse_rule(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _webhook(text: str) -> str:
    try:
        return check_webhook(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes, 0 or more")
    return value


def add_alert_arguments(parser: argparse.ArgumentParser) -> None:
    """``--alert-webhook``, ``--alert-cmd``, ``--alert-rule``, ``--alert-silent-after``."""
    group = parser.add_argument_group(
        "alerts",
        "tell a person when a run failed, stopped, finished, went silent, logged NaN/inf, "
        "or meets a rule; each event once, remembered across restarts (docs/viewer.md)",
    )
    group.add_argument(
        "--alert-webhook",
        type=_webhook,
        default=None,
        metavar="URL",
        help="POST each alert as JSON (text, content: Slack, Discord; ntfy: "
        f"{NTFY_EXAMPLE.replace('%', '%%')}); default ${WEBHOOK_VAR}, which keeps "
        "the URL out of ps",
    )
    group.add_argument(
        "--alert-cmd",
        default=None,
        metavar="MODULE.FUNC",
        help="call FUNC(alert) for each alert (alert: a dict of run, event, detail, url, text), "
        "like --remote-transfer-cmd: MODULE.py in the working directory or installed",
    )
    group.add_argument(
        "--alert-rule",
        type=_rule,
        action="append",
        default=[],
        metavar="RULE",
        help="alert when a series' last value compares so ('val/loss>2.5': > >= < <= == !=), "
        f"or when its curve is of a kind ('KIND:SERIES[:key=value,...]', KIND one of "
        f"{', '.join(KINDS)}: 'diverging:train/loss', 'stall:minutes=10'); repeatable",
    )
    group.add_argument(
        "--alert-silent-after",
        type=_minutes,
        default=DEFAULT_SILENT_AFTER_MINUTES,
        metavar="MINUTES",
        help="alert when a running run logs nothing for this long; 0: never (default %(default)g)",
    )


def _webhook_of(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """``--alert-webhook``, else ``$ALERT_WEBHOOK_URL`` (checked the same way), else None."""
    if args.alert_webhook is not None:
        return args.alert_webhook
    try:
        return webhook_from_environment()
    except ValueError as err:
        parser.error(str(err))


def _watched(follower: Follower) -> Callable[[], Iterator[tuple[RunData, str]]]:
    """Every known run with its page's URL: a followed run's data, else its status alone
    (its series' rules and non-finite values then come from its summary).

    A run not followed that had ended is given once, by the summary it was judged by:
    every run is looked at again only when a summary changed (the catalog's version),
    else only the followed and the running ones (10,000 finished runs cost nothing a pass).
    """
    endpoint = follower.client.endpoint
    stubs: dict[str, tuple[RunData, str]] = {}  # with the page's URL: made once a run
    ended: dict[str, object] = {}  # run -> the summary it ended by, as judged
    live: set[str] = set()  # the runs not followed that are not known to have ended
    seen: list[object] = [None]  # the catalog's version last looked at whole

    def runs() -> Iterator[tuple[RunData, str]]:
        known, feeds = follower.known, follower.feeds
        version = follower.catalog.version
        names = list(known) if version != seen[0] else [*feeds, *live]
        seen[0] = version
        for name in names:
            feed, entry = feeds.get(name), known.get(name)
            if feed is not None:
                yield feed.data, endpoint.env_url(feed.env)
                continue
            summary = entry.summary if entry is not None else None
            if summary is None or summary.status is None or ended.get(name) is summary:
                live.discard(name)
                continue
            stub = stubs.get(name)
            if stub is None:
                stub = stubs[name] = (RunData(name), endpoint.env_url(follower.env_of(name)))
            stub[0].status = summary.status
            if summary.status.get("state") in ENDED_STATES:
                ended[name] = summary  # judged once, now
                live.discard(name)
            else:
                live.add(name)
            yield stub

    return runs


def _baseline_of(follower: Follower) -> Callable[[], RunData | None]:
    """The baseline run's data, once it is read (the follower follows it)."""

    def baseline() -> RunData | None:
        name = follower.screen.baseline
        feed = follower.feeds.get(name) if name is not None else None
        return feed.data if feed is not None else None

    return baseline


def _checker(watch: AlertWatch, follower: Follower) -> Callable[[float], None]:
    """What the follow loop calls after each pass: a failing check is logged, never its end."""
    failed: list[bool] = []
    watched = _watched(follower)

    def summary_of(name: str) -> Mapping[str, SeriesStats] | None:
        entry = follower.known.get(name)
        return entry.summary.series if entry is not None and entry.summary is not None else None

    def check(now: float) -> None:
        try:
            watch.check(watched(), now, summary_of)
        except Exception:
            if not failed:  # once: it would fail the same way on every pass
                log.exception("checking the runs for alerts failed; following goes on")
            failed.append(True)

    return check


@contextmanager
def alerting(
    args: argparse.Namespace, parser: argparse.ArgumentParser, follower: Follower
) -> Iterator[AlertSender | None]:
    """Alerts for ``follower``'s runs while in the block, as ``args`` ask; None without any.

    A wrong ``--alert-cmd``, or rules without a destination, end the program
    (usage error) before anything starts. Leaving the block delivers what is
    queued, for at most :data:`CLOSE_TIMEOUT_S`.
    """
    webhook = _webhook_of(args, parser)
    against = [r for r in args.alert_rule if getattr(r, "kind", "") in BASELINE_KINDS]
    if against and follower.screen.baseline is None:
        parser.error(
            f"--alert-rule {str(against[0])!r} judges against the baseline run: "
            "choose one with --baseline RUN"
        )
    if webhook is None and args.alert_cmd is None:
        if args.alert_rule:
            parser.error(
                f"--alert-rule needs --alert-webhook URL (or ${WEBHOOK_VAR}) or --alert-cmd "
                "MODULE.FUNC"
            )
        yield None
        return
    memory = AlertMemory.for_source(str(follower.runs))
    sender = AlertSender(memory.delivered)
    if args.alert_cmd is not None:
        try:
            plugin = resolve_callable(args.alert_cmd, "--alert-cmd", "myalerts.notify")
            check_plugin(plugin, args.alert_cmd)
        except (TransferSpecError, ValueError) as err:
            parser.error(str(err))
        sender.add_plugin(args.alert_cmd, plugin)
    if webhook is not None:
        sender.add_webhook(webhook)
    silent = args.alert_silent_after * 60 if args.alert_silent_after > 0 else None
    watch = AlertWatch(memory, sender.send, args.alert_rule, silent, _baseline_of(follower))
    # a curve on a series is judged from its points: among many runs the running are read too
    follower.runset.follow_running = any(getattr(r, "tag", None) for r in watch.curves.rules)
    follower.on_pass = _checker(watch, follower)
    log.info(
        "alerts to %s; sent ones remembered in %s",
        " and ".join(d.name for d in sender.destinations),
        memory.path,
    )
    try:
        yield sender
    finally:
        sender.close(CLOSE_TIMEOUT_S)
        memory.save()  # what was delivered since the last pass
