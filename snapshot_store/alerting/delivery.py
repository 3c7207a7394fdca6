"""Delivering alerts off the caller's thread (the follow loop, a run's writer thread): a
webhook POST, or a user's ``--alert-cmd`` plugin.

Each destination has its own lanes (:data:`SENDS_AT_ONCE`, a queue and a worker
thread each), so a slow or dead one never holds up the caller, nor the other
destination. One run's alerts go through one lane, in the order they were sent
(a rule's, then the run's end); another run's take the least busy lane, so a
slow try holds up no other run while no more runs than lanes wait (a webhook
try's deadline: :mod:`~.webhook`).
A failed delivery is logged and retried :data:`ATTEMPTS` times in all, waiting
ever longer between tries (:data:`FIRST_RETRY_S`, doubling); then it is given
up, with an error. An alert every destination delivered is handed to the
sender's ``on_delivered`` (the viewer's memory of sent alerts, a run's status);
one given up, or still queued at exit, is not, so whoever judges next sends it.
A user's plugin has :data:`PLUGIN_DEADLINE_S` to return (a webhook try has its own
deadline): a call that does not return can not be stopped, so its alert is given
up, not tried again, and its lane goes on; while :data:`SENDS_AT_ONCE` calls hang,
the plugin's alerts are given up at once.
"""

from __future__ import annotations

import inspect
import logging
import queue
import threading
import time
from collections.abc import Callable

from run_core.redaction import redact_text

from .alert import Alert
from .webhook import describe_webhook, post_webhook

log = logging.getLogger(__name__)

ATTEMPTS = 5
CLOSE_TIMEOUT_S = 15.0  # how long a closing sender (a viewer, a run) still delivers its queue
FIRST_RETRY_S = 1.0
PLUGIN_DEADLINE_S = 30.0  # an --alert-cmd call's time to return
SENDS_AT_ONCE = 8  # lanes: alerts one destination delivers at a time, each with its tries


class NotReturned(Exception):
    """A plugin call still running past its deadline (or too many such calls): not retried."""


def check_plugin(plugin: Callable[..., object], spec: str) -> None:
    """ValueError unless ``plugin(alert)`` binds (one positional argument)."""
    try:
        signature = inspect.signature(plugin)
    except (TypeError, ValueError):  # a builtin without a signature: its first call will tell
        return
    try:
        signature.bind({})
    except TypeError:
        name = spec.rsplit(".", 1)[-1]
        raise ValueError(
            f"--alert-cmd {spec}: {spec}{signature} can not be called with one alert: "
            f"define it as def {name}(alert) (alert is a dict: run, event, detail, url, text, ...)"
        ) from None


class Destination:
    """One place alerts go, through :data:`SENDS_AT_ONCE` lanes: a run's alerts keep their
    order, and an alert whose tries are slow holds up only the runs of its lane."""

    def __init__(
        self,
        name: str,
        deliver: Callable[[Alert], object],
        done: Callable[[Alert, bool], None],
        deadline: float | None = None,
    ):
        """``deadline``: seconds a call of ``deliver`` has, on a thread of its own (a plugin);
        None where ``deliver`` keeps its own (a webhook try)."""
        self.name, self.deliver, self.done, self.deadline = name, deliver, done, deadline
        self._hung = 0  # calls past their deadline that have not returned yet
        self.lanes: list[queue.Queue[Alert | None]] = [queue.Queue() for _ in range(SENDS_AT_ONCE)]
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._load = [0] * SENDS_AT_ONCE  # alerts queued or being tried, per lane
        self._runs: dict[str, tuple[int, int]] = {}  # run -> (its lane, its alerts there)
        self.threads = [
            threading.Thread(target=self._work, args=(lane,), name=f"alerts {name}", daemon=True)
            for lane in range(SENDS_AT_ONCE)
        ]
        for thread in self.threads:
            thread.start()

    def put(self, alert: Alert) -> None:
        """Queue ``alert`` in its run's lane while it has alerts there, else the least busy."""
        with self._lock:
            lane, count = self._runs.get(alert.run, (-1, 0))
            if lane < 0:
                lane = min(range(SENDS_AT_ONCE), key=self._load.__getitem__)
            self._runs[alert.run] = (lane, count + 1)
            self._load[lane] += 1
        self.lanes[lane].put(alert)

    def _work(self, lane: int) -> None:
        while (alert := self.lanes[lane].get()) is not None:
            delivered = self._send(alert)
            with self._lock:
                self._load[lane] -= 1
                _, count = self._runs.pop(alert.run)
                if count > 1:
                    self._runs[alert.run] = (lane, count - 1)
            self.done(alert, delivered)

    def _send(self, alert: Alert) -> bool:
        """Whether ``alert`` was delivered, trying up to :data:`ATTEMPTS` times."""
        delay = FIRST_RETRY_S
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._try(alert)
            except NotReturned as err:
                log.error(
                    "alert %r of run %r to %s given up: %s; not remembered as sent, so it is "
                    "sent again by whoever judges the run next",
                    alert.event, alert.run, self.name, err,
                )  # fmt: skip
                return False
            except Exception as err:  # the user's plugin, the network: never the follower's end
                reason = redact_text(f"{type(err).__name__}: {err}")
                if attempt == ATTEMPTS:
                    log.error(
                        "alert %r of run %r to %s not delivered after %d attempts: %s; "
                        "not remembered as sent, so it is sent again by whoever judges the run next",
                        alert.event, alert.run, self.name, ATTEMPTS, reason,
                    )  # fmt: skip
                    return False
                log.warning(
                    "alert %r of run %r to %s failed (attempt %d of %d: %s); retrying in %g s",
                    alert.event, alert.run, self.name, attempt, ATTEMPTS, reason, delay,
                )  # fmt: skip
                if self.closing.wait(delay):
                    log.warning(
                        "alert %r of run %r to %s: not sent before exit",
                        alert.event,
                        alert.run,
                        self.name,
                    )
                    return False  # not remembered: sent again by whoever judges next
                delay *= 2
            else:
                log.info("alert %r of run %r sent to %s", alert.event, alert.run, self.name)
                return True
        return False

    def _try(self, alert: Alert) -> None:
        """One call of ``deliver``: here, or on a thread of its own within :attr:`deadline`."""
        if self.deadline is None:
            self.deliver(alert)
            return
        with self._lock:
            if self._hung >= SENDS_AT_ONCE:
                raise NotReturned(f"{self._hung} earlier calls have not returned")
        finished, late, failed = threading.Event(), threading.Event(), []

        def call() -> None:
            try:
                self.deliver(alert)
            except BaseException as err:  # a sys.exit() in the plugin too: a failed try
                failed.append(err if isinstance(err, Exception) else RuntimeError(repr(err)))
            finally:
                with self._lock:  # one lock with the count below: counted once, freed once
                    finished.set()
                    self._hung -= late.is_set()

        threading.Thread(target=call, name=f"alert-cmd {self.name}", daemon=True).start()
        if not finished.wait(self.deadline):
            with self._lock:
                hung = not finished.is_set()  # else it returned just now
                late.set()
                self._hung += hung
            if hung:
                raise NotReturned(f"the call did not return within {self.deadline:g} s")
        if failed:
            raise failed[0]

    def close(self) -> None:
        """Tell the workers to stop once their lanes are empty, trying each alert left once."""
        self.closing.set()
        for lane in self.lanes:
            lane.put(None)


class AlertSender:
    """Hands each alert to every destination; ``on_delivered(alert)`` once all delivered it."""

    def __init__(self, on_delivered: Callable[[Alert], None]) -> None:
        self.on_delivered = on_delivered
        self.destinations: list[Destination] = []
        self._lock = threading.Lock()
        # (run, key) -> (destinations not done with it yet, whether all done delivered it)
        self._pending: dict[tuple[str, str], tuple[int, bool]] = {}

    def add_webhook(self, url: str) -> None:
        """Send alerts as JSON POSTs to ``url``."""
        self.destinations.append(
            Destination(describe_webhook(url), lambda a: post_webhook(url, a), self._done)
        )

    def add_plugin(self, spec: str, plugin: Callable[..., object]) -> None:
        """Send alerts by calling ``plugin(alert_dict)``."""
        self.destinations.append(
            Destination(spec, lambda a: plugin(a.as_dict()), self._done, PLUGIN_DEADLINE_S)
        )

    def send(self, alert: Alert) -> None:
        """Queue ``alert`` for every destination; returns at once."""
        with self._lock:
            self._pending[(alert.run, alert.key)] = (len(self.destinations), True)
        for destination in self.destinations:
            destination.put(alert)

    def _done(self, alert: Alert, delivered: bool) -> None:
        with self._lock:
            left, all_delivered = self._pending.pop((alert.run, alert.key))
            left, all_delivered = left - 1, all_delivered and delivered
            if left:
                self._pending[(alert.run, alert.key)] = (left, all_delivered)
                return
        if all_delivered:
            self.on_delivered(alert)

    def close(self, timeout: float) -> None:
        """Try what is queued once more (no waits between tries), for ``timeout`` seconds in all.

        What is not delivered by then is not handed to ``on_delivered``.
        """
        deadline = time.monotonic() + timeout
        for destination in self.destinations:
            destination.close()
        for destination in self.destinations:
            for thread in destination.threads:
                thread.join(max(0.0, deadline - time.monotonic()))
