"""A W&B Table a run logged, read back: W&B's ``Table`` shape (``columns``, ``data``,
``get_dataframe()``), its image cells as Pillow images.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from snapshot_store.format.kinds import ExtraRecord


@dataclass(frozen=True)
class LoggedTable:
    """One logged table: where it was logged (``step``, ``wall_time``), its ``columns`` and
    its rows (``data``), each cell as stored (an image as a ``PIL.Image``)."""

    step: int
    wall_time: float
    columns: list[str]
    data: list[list[Any]]

    def get_dataframe(self) -> Any:
        """W&B's: the table as a pandas DataFrame (``pandas`` is needed)."""
        import pandas as pd

        return pd.DataFrame.from_records(self.data, columns=self.columns)


def _cell(value: Any) -> Any:
    """A cell as read back: an image cell (the store keeps its PNG bytes) as a Pillow image;
    bytes that are no image stay bytes, so one hostile cell costs the table nothing else."""
    if isinstance(value, bytes):
        from PIL import Image, UnidentifiedImageError

        try:
            return Image.open(io.BytesIO(value))
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError):
            return value
    return value


def tables_of(extras: list[ExtraRecord]) -> dict[str, list[LoggedTable]]:
    """Every ``table`` record of a store's extras, by key, in logged order."""
    tables: dict[str, list[LoggedTable]] = {}
    for kind, tag, step, wall, data in extras:
        if kind == "table":
            rows = [[_cell(value) for value in row] for row in data["rows"]]
            tables.setdefault(tag, []).append(LoggedTable(step, wall, data["columns"], rows))
    return tables
