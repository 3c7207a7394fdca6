"""Which visdom window a store group is drawn in, and what that window is called."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WindowSpec:
    """A plot window: its visdom id (stable, so a restart redraws the same window) and labels."""

    win: str
    title: str
    ylabel: str
    order: int  # position among a run's windows: losses first, odd groups last


# The recorder's conventional groups. Anything else (a SummaryWriter tag ``A/b``
# arrives as group ``A``) gets a window of its own, titled by the group.
_KNOWN = {
    "train": WindowSpec("train", "train losses", "loss", 0),
    "val": WindowSpec("validation", "validation", "loss", 1),
    "valid": WindowSpec("validation", "validation", "loss", 1),
    "validation": WindowSpec("validation", "validation", "loss", 1),
    "metric": WindowSpec("metrics", "metrics", "value", 2),
    "metrics": WindowSpec("metrics", "metrics", "value", 2),
    "lr": WindowSpec("lr", "learning rate", "learning rate", 3),
    "throughput": WindowSpec("throughput", "throughput", "per second", 4),
}

STATUS_WIN = "status"
IMAGE_WIN_PREFIX = "image_"

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_id(text: str) -> str:
    """``text`` reduced to characters safe in visdom window and env ids."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


def window_for_group(group: str) -> WindowSpec:
    """The window that shows ``group``'s series (one trace per series name)."""
    known = _KNOWN.get(group.lower())
    if known is not None:
        return known
    return WindowSpec(f"group_{safe_id(group)}", group, "value", 10)


def image_window(group: str, name: str) -> str:
    """Window id of the latest image logged as ``name`` in ``group``."""
    return f"{IMAGE_WIN_PREFIX}{safe_id(group)}_{safe_id(name)}"
