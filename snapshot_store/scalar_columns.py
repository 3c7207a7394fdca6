"""Writer thread: logged scalar records turned into per-series float columns for one frame.

Pending tensors are converted in one batch per device first
(:mod:`~snapshot_store.tensor_values`); every value that is not one number is
dropped with one warning per ``group/name``.
"""

from __future__ import annotations

import logging
from typing import Any

from .frames import SeriesColumns
from .tensor_values import CHANGED_IN_PLACE, DeviceCopyError, Pending, to_floats

log = logging.getLogger(__name__)

# The columns as this class builds them, before frames.py packs them.
_ListColumns = tuple[str, str, list[int], list[float], list[float], list[float]]

# (group, step, epoch, wall_time, {name: value}, {name: tensor version} or None) as
# logged, before conversion to floats; the versions name the values that are tensors.
ScalarRecord = tuple[str, int, float, float, dict[str, Any], dict[str, int] | None]


def _to_float(value: Any) -> float:
    if hasattr(value, "item"):
        value = value.item()
    return float(value)


class ScalarColumns:
    """Converts batches of records; remembers which names were warned about and which to copy."""

    def __init__(self) -> None:
        self._bad: set[tuple[str, str]] = set()
        # Names whose logged tensors were changed in place; the recorder copies them at log().
        self.copied: set[tuple[str, str]] = set()

    def convert(
        self, records: list[ScalarRecord]
    ) -> tuple[list[SeriesColumns], list[DeviceCopyError]]:
        """Columns of ``records``, and the failed device copies (their values left out)."""
        failures = self._convert_tensors(records)
        return self._columns(records), failures

    def _columns(self, records: list[ScalarRecord]) -> list[SeriesColumns]:
        """Transpose logged records into per-series columns.

        Records are grouped by their (group, names) shape first, so the per-point
        work is list comprehensions rather than one dict lookup per value.
        """
        shapes: dict[tuple[str, ...], list[ScalarRecord]] = {}
        for record in records:
            shapes.setdefault((record[0], *record[4]), []).append(record)
        series: dict[tuple[str, str], _ListColumns] = {}
        for (group, *names), recs in shapes.items():
            steps = [r[1] for r in recs]
            epochs = [r[2] for r in recs]
            times = [r[3] for r in recs]
            for name in names:
                values = [r[4][name] for r in recs]
                keep = None
                if not all(type(v) is float for v in values):
                    values, keep = self._convert(group, name, values)
                cols = series.get((group, name))
                if cols is None:
                    cols = series[(group, name)] = (group, name, [], [], [], [])
                if keep is None:
                    cols[2].extend(steps)
                    cols[3].extend(epochs)
                    cols[4].extend(times)
                else:
                    cols[2].extend(steps[i] for i in keep)
                    cols[3].extend(epochs[i] for i in keep)
                    cols[4].extend(times[i] for i in keep)
                cols[5].extend(values)
        return [cols for cols in series.values() if cols[2]]

    def _convert_tensors(self, records: list[ScalarRecord]) -> list[DeviceCopyError]:
        """Floats for every pending tensor of ``records``: one copy per device and dtype."""
        pending = []
        for group, _, _, _, values, versions in records:
            if versions is not None:
                for name, version in versions.items():
                    item = values[name] = Pending(values[name], version)
                    pending.append((f"{group}/{name}", item))
        if not pending:
            return []
        failures = to_floats(pending)
        if len(failures) > 1:  # reported as one error naming every value involved
            tags = sorted({tag for failure in failures for tag in failure.tags})
            cause = failures[0].__cause__ or failures[0]
            failures = [DeviceCopyError("their devices", tags, cause)]
        return failures

    def _convert(
        self, group: str, name: str, values: list[Any]
    ) -> tuple[list[float], list[int] | None]:
        """Floats of ``values``; indexes kept, or None when every value converted."""
        out: list[float] = []
        keep: list[int] = []
        for i, value in enumerate(values):
            if type(value) is Pending:
                if value.value is None:
                    self._drop(group, name, value)
                    continue
                out.append(value.value)
                keep.append(i)
                continue
            try:
                out.append(value if type(value) is float else _to_float(value))
                keep.append(i)
            except (TypeError, ValueError, RuntimeError):
                self._warn_bad_value(group, name, f"value {value!r} is not a number")
        return out, (None if len(keep) == len(values) else keep)

    def _drop(self, group: str, name: str, value: Pending) -> None:
        if value.problem != CHANGED_IN_PLACE:
            self._warn_bad_value(group, name, f"the logged tensor {value.problem}")
            return
        if (group, name) not in self.copied:
            self.copied.add((group, name))
            log.warning(
                "%s/%s: a logged tensor was changed in place before the recorder copied it; "
                "that value is dropped and later ones are copied at log() time. To log the "
                "value of a tensor you go on changing, pass t.detach().clone() or t.item().",
                group,
                name,
            )

    def _warn_bad_value(self, group: str, name: str, what: str) -> None:
        if (group, name) not in self._bad:
            self._bad.add((group, name))
            log.warning("%s/%s: %s; not recorded", group, name, what)
