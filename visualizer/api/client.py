"""``Api()``: W&B's read API over snapshot stores, offline (a path or an ``s3://`` prefix).

Listing reads only each run's two small documents, ``meta.pickle`` and
``status.pickle`` (which holds the run's summary), through the catalog the viewer's
runs table uses, on its pool of threads; a store written before summaries is read
whole once. A run's points are read only when asked for (:meth:`.Run.history`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from visualizer.sources.catalog import Catalog, Entry
from visualizer.sources.runs import locate

from .filters import compile_filters
from .run import Run

_WAIT_S = 1.0  # a collect's wait for the pool: only how often the loop looks again


def read_runs(location: str, s3_client: Any = None) -> list[Run]:
    """Every run at ``location`` (a path or an ``s3://`` URL), from its documents.

    FileNotFoundError (one line) when there is none; S3ReadError when a listing fails.
    """
    runs = locate(str(location), s3_client)
    # few=0: a store without a summary is read whole, as for a runs table of many runs.
    catalog = Catalog(runs, poll_interval=_WAIT_S, max_interval=_WAIT_S, few=0)
    try:
        if not catalog.scan():
            raise FileNotFoundError(f"no snapshot store found: expected {runs.waiting_for()}")
        while not catalog.complete:
            catalog.collect(wait=_WAIT_S)
        entries = list(catalog.entries.values())
    finally:
        catalog.close()
    return [_run(entry) for entry in entries if entry.spec is not None]


def _run(entry: Entry) -> Run:
    assert entry.spec is not None and entry.summary is not None
    return Run(entry.spec.name, entry.found.source, entry.summary, entry.meta)


class Api:
    """``wandb.Api()`` for runs on disk or in S3: :meth:`runs` and :meth:`run`.

    ``s3_client``: a boto3 client for ``s3://`` paths (default: one from the environment,
    as the viewer makes it).
    """

    def __init__(self, s3_client: Any = None) -> None:
        self.s3_client = s3_client

    def runs(self, path: str, filters: Mapping[str, Any] | None = None) -> list[Run]:
        """The runs at ``path`` (a store, a directory of runs or an ``s3://`` prefix) that
        ``filters`` keeps (see :mod:`visualizer.api.filters`), in name order of their folders.

        ValueError for a filter it can not take, FileNotFoundError for a path with no run.
        """
        keep = compile_filters(filters)  # refused before anything is read
        runs = read_runs(path, self.s3_client)
        fields = ({"name": r.name, "state": r.state, "config": r.config,
                   "summary": r.summary} for r in runs)  # fmt: skip
        return [run for run, field in zip(runs, fields, strict=True) if keep(field)]

    def run(self, path: str) -> Run:
        """The one run at ``path`` (its store or its run directory); ValueError when ``path``
        holds several runs (name one: ``path/<name>``)."""
        runs = read_runs(path, self.s3_client)
        if len(runs) != 1:
            names = ", ".join(run.name for run in runs[:3])
            raise ValueError(
                f"{path} holds {len(runs)} runs ({names}{', ...' if len(runs) > 3 else ''}): "
                "use Api().runs(path), or Api().run(path/<name>) for one of them"
            )
        return runs[0]
