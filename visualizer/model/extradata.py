"""What a run's extra records say (text, histograms, hparams, ...), kept for the windows.

The data side of :mod:`visualizer.panes.extra_windows`: :class:`~visualizer.model.rundata.RunData`
holds one :class:`ExtraData` per run; the windows read it.
"""

from __future__ import annotations

from typing import Any

from snapshot_store.format.kinds import HPARAMS_TAG, ExtraRecord

ExtraKey = tuple[str, str]  # (kind, tag)

TEXT_ENTRIES = 20  # latest texts kept (and shown) per tag
HPARAMS_ROWS = 1000  # latest rows kept (and shown) of the hparams table


class ExtraData:
    """A run's extra records: latest per (kind, tag), texts' recent history, histograms per step."""

    def __init__(self) -> None:
        self.latest: dict[ExtraKey, ExtraRecord] = {}
        # The hparams table's rows in order: one per session (rule in snapshot_store.format.kinds).
        self.hparams: list[ExtraRecord] = []
        self.hparams_dropped = 0  # older rows past HPARAMS_ROWS
        self.texts: dict[str, list[tuple[int, str]]] = {}
        self.histograms: dict[str, dict[int, dict[str, Any]]] = {}
        # Every custom-scalar chart seen: each add_custom_scalars* call adds its charts.
        self.layout: dict[str, dict[str, list]] = {}
        # Every artifact the run logged or used, in order: one pane lists their versions.
        self.artifacts: list[ExtraRecord] = []
        self.changed: set[ExtraKey] = set()

    def apply(self, records: list[ExtraRecord]) -> None:
        """Merge records in the order they were written (a later one of a tag wins)."""
        for record in records:
            kind, tag, step, _wall, data = record
            if kind == "hparams":
                key = ("hparams", "")  # one table for every hparams record
                self._add_hparams_row(record)
            elif kind == "text":
                key = (kind, tag)
                entries = self.texts.setdefault(tag, [])
                entries.append((step, data["text"]))
                del entries[:-TEXT_ENTRIES]
            elif kind == "layout":
                key = (kind, "")
                for category, charts in data["layout"].items():
                    self.layout.setdefault(category, {}).update(charts)
            elif kind in ("artifact", "artifact_use"):
                key = ("artifacts", "")
                self.artifacts.append(record)
            elif kind == "histogram":
                key = (kind, tag)
                self.histograms.setdefault(tag, {})[step] = data
            else:
                key = (kind, tag)
                self.latest[key] = record
            self.changed.add(key)

    def _add_hparams_row(self, record: ExtraRecord) -> None:
        """A row per add_hparams call; a named run's row replaces its earlier one."""
        tag = record[1]
        if tag != HPARAMS_TAG:
            self.hparams = [row for row in self.hparams if row[1] != tag]
        self.hparams.append(record)
        if len(self.hparams) > HPARAMS_ROWS:
            self.hparams_dropped += len(self.hparams) - HPARAMS_ROWS
            del self.hparams[:-HPARAMS_ROWS]
