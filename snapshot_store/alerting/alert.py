"""An alert: one event of one run, as a webhook or an ``--alert-cmd`` plugin is given it.

The viewer (its follow loop) and a run's writer thread make the same :class:`Alert`
and send it through the same delivery code (:mod:`.delivery`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Alert:
    """One event of one run: what a webhook or an ``--alert-cmd`` plugin is given."""

    run: str
    event: str  # failed, stopped, finished, silent, non-finite, rule, or a curve rule's kind
    detail: str  # what happened, in words: "failed at step 120"
    url: str  # the run's page ('' from a writer: it knows no viewer's page)
    key: str  # the event's identity, remembered once sent
    time: float

    @property
    def text(self) -> str:
        """One line naming the run, the event and the page (when there is one)."""
        where = f": {self.url}" if self.url else ""
        return f"run {self.run!r} {self.detail} ({self.event}){where}"

    def as_dict(self) -> dict[str, Any]:
        """Plain fields, ``text``, and a short ``title`` (run: event)."""
        return {**asdict(self), "text": self.text, "title": f"{self.run}: {self.event}"}
