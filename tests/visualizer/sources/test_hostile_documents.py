"""Hostile documents, generated: huge ints, cycles, shared-reference bombs, deep nesting, odd
key types, NaN and infinities anywhere in a run's status or meta. The viewer's catalog and
runs table, ``Api().runs()`` and ``export --kind runs`` each finish within a time and memory
bound, read the good runs beside it, and name the run they can not read."""

from __future__ import annotations

import csv
import io
import logging
import resource
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from run_core.exit_codes import ExitCode
from snapshot_store.format import frames as fmt
from tests.fixtures.runs.hostile import documents, spliced, write_good
from visualizer.__main__ import main
from visualizer.api import Api

from .test_hostile_stores import catalog_rows

GOOD = 2
SECONDS = 10.0  # each reader's bound per store; a bomb once kept them busy for good
MEMORY = 512 << 20  # bytes of peak memory each reader may add; the export once took 1.3 GB

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from([-(10**309), 2**1024, 2**63, -(2**63) - 1]),
    st.text(max_size=12),
    st.binary(max_size=8),
)
_KEYS = st.one_of(
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
    st.binary(max_size=4),
    st.tuples(st.integers()),
    st.frozensets(st.integers(), max_size=2),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_KEYS, inner, max_size=4),
        st.tuples(inner, inner),
        st.frozensets(st.integers() | st.text(max_size=3), max_size=3),
    ),
    max_leaves=16,
)
_SHAPES = st.sampled_from(["value", "cycle", "dag", "deep"])
_WHERE = st.sampled_from(
    ["options", "summary", "name", "state", "updated", "step", "start_time", "series", "hparams"]
)


def _shaped(shape: str, value: Any, levels: int, digits: int) -> Any:
    """``value`` in a ``shape``; with an int of ``digits`` digits beside it (made here: one
    past 4,300 digits has no repr, and hypothesis shows a failing example's)."""
    if digits:
        value = [value, 10 ** (digits - 1)]
    if shape == "cycle":
        loop: list[Any] = [value]
        loop.append({"again": loop})
        return loop
    if shape == "dag":
        node = [value]
        for _ in range(levels):
            node = [node, node]
        return node
    return value


def _write(root: Path, where: str, value: Any, deep: int) -> None:
    """The hostile store ``root/hostile``; ``deep`` > 0: lists nested that deep at ``where``."""
    store = root / "hostile" / "pickle"
    store.mkdir(parents=True)
    marker = "@@DEEP@@"
    meta, status = documents("hostile", marker if deep else value, where)
    for name, doc in ((fmt.META_FILE, meta), (fmt.STATUS_FILE, status)):
        payload = fmt.dumps(doc) if not deep else spliced(doc, marker, deep)
        (store / name).write_bytes(fmt.encode_frame(payload))


def _bounded(read) -> Any:
    """``read()``, which must finish within :data:`SECONDS` and :data:`MEMORY`."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    began = time.perf_counter()
    result = read()
    assert time.perf_counter() - began < SECONDS
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - before < MEMORY
    return result


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    where=_WHERE,
    value=_VALUES,
    shape=_SHAPES,
    levels=st.integers(min_value=1, max_value=60),
    deep=st.sampled_from([0, 0, 0, 129, 50_000]),
    digits=st.sampled_from([0, 0, 0, 5_000]),
)
def test_no_hostile_document_stops_the_catalog_the_api_or_the_export(
    tmp_path_factory, caplog, capsys, where, value, shape, levels, deep, digits
):
    root = tmp_path_factory.mktemp("hostile")
    good = write_good(root, GOOD)
    hostile = _shaped(shape, value, levels, digits)
    _write(root, where, hostile, deep if shape == "deep" else 0)
    caplog.clear()
    caplog.set_level(logging.WARNING)

    rows = _bounded(lambda: catalog_rows(root))
    assert len(rows) == GOOD + 1 and all(name in rows for name in good)
    unreadable = [name for name, row in rows.items() if str(row[1]).startswith("unreadable")]
    assert unreadable in ([], [next(n for n in rows if n not in good)])
    named = [r.getMessage() for r in caplog.records if "hostile" in r.getMessage()]
    assert len(named) == len(unreadable), named  # one warning, naming its folder

    runs = _bounded(lambda: Api().runs(str(root)))
    assert len(runs) == GOOD + 1 and {run.name for run in runs} >= set(good)

    capsys.readouterr()
    status = _bounded(lambda: main(["export", "--pickle-dir", str(root), "--kind", "runs"]))
    assert status == ExitCode.OK
    limit = csv.field_size_limit(1 << 30)  # a shared list within the budget is a long cell
    try:
        table = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    finally:
        csv.field_size_limit(limit)
    assert len(table) == 1 + GOOD + 1
