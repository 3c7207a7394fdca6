"""The alerts a run's writer sent, as its status document records them.

Each alert every destination delivered is kept in status under :data:`SENT_FIELD`
(its event, words, key and time), so a viewer opened later remembers it as sent
instead of sending it again, and a snapshot can show what fired. A resumed run
carries the list on. Read from a store, the field is data: anything malformed is
skipped, never trusted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .alert import Alert

SENT_FIELD = "alerts_sent"
MAX_SENT = 1000  # a run's rules each fire once: a longer list is not a writer's


def sent_record(alert: Alert) -> dict[str, Any]:
    """What status keeps of a delivered ``alert``."""
    return {"event": alert.event, "detail": alert.detail, "key": alert.key, "time": alert.time}


def sent_alerts(status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The well-formed alert records of a status document (at most :data:`MAX_SENT`)."""
    records = (status or {}).get(SENT_FIELD)
    if not isinstance(records, list):
        return []
    return [record for record in records[:MAX_SENT] if _well_formed(record)]


def sent_keys(status: Mapping[str, Any] | None) -> set[str]:
    """The keys of the alerts a run's writer sent."""
    return {record["key"] for record in sent_alerts(status)}


def _well_formed(record: object) -> bool:
    if not isinstance(record, dict):
        return False
    texts = all(isinstance(record.get(k), str) for k in ("event", "detail", "key"))
    when = record.get("time")
    return texts and isinstance(when, int | float) and math.isfinite(when)
