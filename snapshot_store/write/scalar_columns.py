"""Writer thread: logged scalar records turned into per-series columns for one frame, in bulk.

The recorder puts each logged value on the :class:`ScalarQueue` as one
:data:`ScalarRecord`, whose six items the queue keeps in one flat list: no tuple or
dict per value for the garbage collector to track (a queue of tuples doubles what a
``log()`` costs once thousands wait). :meth:`ScalarColumns.convert` takes a batch
apart with six slices; a training loop logs the same tags in the same order every
step, so the series are strided slices of those; any other batch is grouped with one
stable numpy sort. The writer's work per value is a few C-level steps, not a dict
lookup and list appends: that work holds the GIL the training thread needs.
Pending tensors are converted in one batch per device first
(:mod:`~snapshot_store.write.tensor_values`); every value that is not one number is
dropped with one warning per ``group/name``.
"""

from __future__ import annotations

import logging
from array import array
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np

from snapshot_store.format.batches import SeriesColumns
from snapshot_store.format.schema import INT64_MAX, INT64_MIN
from snapshot_store.write.tensor_values import CHANGED_IN_PLACE, DeviceCopyError, Pending, to_floats

log = logging.getLogger(__name__)

# One logged scalar: (group, name, step, epoch, wall_time, value). value is a float, a
# Pending tensor, or whatever the caller passed (converted or dropped by ScalarColumns).
ScalarRecord = tuple[str, str, int, float, float, Any]
# A record's items in the queue, by position: the one place their order is named.
GROUP, NAME, STEP, EPOCH, WALL_TIME, VALUE = range(6)
RECORD_ITEMS = 6

# Packed typecodes of the steps and float columns (see packed.py); a batch with a
# step outside int64 is stored as lists.
_TYPECODES = ("q", "d", "d", "d")


class ScalarQueue(list[Any]):
    """The scalars the training thread logged and the writer thread has not taken yet:
    each record's :data:`RECORD_ITEMS` items in a row, records in logged order.

    :meth:`put` and :meth:`take` are each one list operation, atomic under the GIL: no
    lock between the two threads. ``len()`` counts items (``RECORD_ITEMS`` a record).
    """

    __slots__ = ()  # no instance dict: put is found on the class at once

    if TYPE_CHECKING:

        def put(self, record: ScalarRecord) -> None:
            """Queue one record: its items at the end."""

    else:
        # list.extend itself: a put costs what the extend does and leaves no object per
        # record behind.
        put = list.extend

    def take(self) -> list[Any]:
        """Every record queued so far, its items in a row, removed from the queue (later
        puts stay queued)."""
        taken = len(self)  # log() may put meanwhile: behind these, kept by the del
        records = self[:taken]
        del self[:taken]
        return records


def last_wall_time(queued: list[Any]) -> float:
    """The wall time of the last record in ``queued`` (a :meth:`ScalarQueue.take`)."""
    return float(queued[WALL_TIME - RECORD_ITEMS])


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

    def convert(self, queued: list[Any]) -> tuple[list[SeriesColumns], int | None, list[Exception]]:
        """Columns of the ``queued`` records (a :meth:`ScalarQueue.take`), their furthest
        step, and the failed device copies.

        Columns are typed arrays (int64 steps, float64 the rest), or lists where a
        step does not fit int64, which the frame stores as lists.
        """
        groups, names, steps, epochs, times, values = (
            queued[i::RECORD_ITEMS] for i in (GROUP, NAME, STEP, EPOCH, WALL_TIME, VALUE)
        )
        failures: list[Exception] = []
        if set(map(type, values)) != {float}:
            values, keep, failures = self._floats(groups, names, values)
            if keep is not None:
                groups, names, steps, epochs, times, values = (
                    list(compress(column, keep))
                    for column in (groups, names, steps, epochs, times, values)
                )
                if not values:
                    return [], None, failures
        last = max(steps)
        as_lists = last > INT64_MAX or min(steps) < INT64_MIN  # stored as lists, not packed
        columns = (steps, epochs, times, values)
        return _by_series(groups, names, columns, as_lists), last, failures

    def _floats(
        self, groups: list[str], names: list[str], values: list[Any]
    ) -> tuple[list[float], list[bool] | None, list[Exception]]:
        """Floats of ``values``, which of them are kept (None: all), the failed device copies."""
        failures: list[Exception] = list(self._convert_tensors(groups, names, values))
        out = list(values)
        keep = [True] * len(out)
        for i, value in enumerate(values):
            if type(value) is float:
                continue
            group, name = groups[i], names[i]
            if type(value) is Pending:
                if value.value is None:
                    self._drop(group, name, value)
                    keep[i] = False
                else:
                    out[i] = value.value
                continue
            try:
                out[i] = _to_float(value)
            except (TypeError, ValueError, RuntimeError):
                self._warn_bad_value(group, name, f"value {value!r} is not a number")
                keep[i] = False
        return out, (None if all(keep) else keep), failures

    def _convert_tensors(
        self, groups: list[str], names: list[str], values: list[Any]
    ) -> list[DeviceCopyError]:
        """Floats for every pending tensor among ``values``: one copy per device and dtype."""
        pending = [
            (f"{groups[i]}/{names[i]}", value)
            for i, value in enumerate(values)
            if type(value) is Pending
        ]
        if not pending:
            return []
        failures = to_floats(pending)
        if len(failures) > 1:  # reported as one error naming every value involved
            tags = sorted({tag for failure in failures for tag in failure.tags})
            cause = failures[0].__cause__ or failures[0]
            failures = [DeviceCopyError("their devices", tags, cause)]
        return failures

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


def _period(groups: list[str], names: list[str]) -> int | None:
    """P when the batch repeats one sequence of P distinct series (a loop logging the same
    tags in the same order each step, cut anywhere), else None."""
    try:
        period = names.index(names[0], 1)
    except ValueError:
        period = len(names)
    if names[period:] != names[:-period] or groups[period:] != groups[:-period]:
        return None
    if len(set(zip(groups[:period], names[:period], strict=True))) != period:
        return None
    return period


def _pack(column: Any, typecode: str, as_lists: bool) -> Any:
    """A typed array of ``column``'s numbers (built in C), or a list where a step is past int64."""
    if isinstance(column, np.ndarray):
        return column.tolist() if as_lists else array(typecode, column.tobytes())
    return column if as_lists else array(typecode, column)


def _by_series(
    groups: list[str], names: list[str], columns: tuple[list[Any], ...], as_lists: bool
) -> list[SeriesColumns]:
    """One entry per (group, name), in first-logged order, each column in logged order."""
    period = _period(groups, names)
    if period is not None:  # series i is every period-th value from i
        return [
            (
                group,
                name,
                *(
                    _pack(col[i::period], code, as_lists)
                    for col, code in zip(columns, _TYPECODES, strict=True)
                ),
            )
            for i, (group, name) in enumerate(zip(groups[:period], names[:period], strict=True))
        ]
    keys = list(zip(groups, names, strict=True))
    index = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    code_column = np.asarray(list(map(index.__getitem__, keys)), dtype=np.intp)
    order = np.argsort(code_column, kind="stable")  # stable: a series keeps its logged order
    bounds = np.cumsum(np.bincount(code_column, minlength=len(index)))[:-1].tolist()
    dtypes = (object if as_lists else np.int64, np.float64, np.float64, np.float64)
    split = [
        np.split(np.asarray(col, dtype=dtype)[order], bounds)
        for col, dtype in zip(columns, dtypes, strict=True)
    ]
    return [
        (
            *key,
            *(
                _pack(parts[i], code, as_lists)
                for parts, code in zip(split, _TYPECODES, strict=True)
            ),
        )
        for key, i in index.items()
    ]
