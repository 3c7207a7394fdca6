"""The baseline run: the run the others are measured against (``--baseline NAME``).

The runs table gives each run's difference to it, the comparison draws it black and
dashed in every window, and the ``slower`` and ``worse`` alert rules judge against it.
The choice is remembered per followed location in the user's state dir
(:func:`~visualizer.userdirs.source_state_file`), so the next viewer of the same
runs keeps it; ``--baseline ''`` forgets it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from visualizer.userdirs import source_state_file, write_if_changed

log = logging.getLogger(__name__)


class BaselineChoice:
    """The baseline run chosen for the runs at one location, kept in one small JSON file."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source
        self.name: str | None = None
        try:
            name = json.loads(path.read_text())["baseline"]
            self.name = name if isinstance(name, str) and name else None
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("the baseline chosen before can not be read from %s (%s)", path, err)

    @classmethod
    def for_source(cls, source: str) -> BaselineChoice:
        """The choice for the runs at ``source``."""
        return cls(source_state_file("baseline", source), source)

    def choose(self, name: str | None) -> None:
        """Make ``name`` the baseline (None or "": none), remembered at once."""
        self.name = name or None
        document = {"source": self.source, "baseline": self.name}
        try:
            write_if_changed(self.path, json.dumps(document, indent=1).encode())
        except OSError as err:  # a read-only home: the choice holds for this viewer
            log.warning("can not remember the baseline in %s: %s", self.path, err)
