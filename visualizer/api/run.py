"""One run as W&B's ``Api().run()`` gives it: ``name``, ``state``, ``config``, ``summary``,
``history()``, ``scan_history()``, its images and texts by tag, and the artifacts it logged
and used.

The first five come from the run's small documents (read when the run was listed);
``history``, ``scan_history``, ``images`` and ``texts`` read its segments on each call.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from run_core.tags import tag_of
from snapshot_store.format.summary import RunSummary, SeriesStats
from snapshot_store.read.store_reader import Source, read_store

from .artifacts import ApiArtifact, logged_artifacts, used_artifacts
from .filters import MISSING, Fields, dig, fields_of, summary_of
from .logged_table import LoggedTable, tables_of
from .points import ROW_KEYS, WHOLE_MAX, HistoryTable, read_series, table

Documents = tuple[RunSummary, dict[str, Any] | None]  # a run's summary and meta, as read


@dataclass(frozen=True)
class Media:
    """One logged image (``data``: its PNG bytes; ``captions``: as logged with it, one an
    image of a list) or text (``data``: the string)."""

    step: int
    wall_time: float
    data: Any
    captions: list[str] = field(default_factory=list)

    def image(self) -> Any:
        """The image as a ``PIL.Image`` (pillow is a dependency)."""
        from PIL import Image

        return Image.open(io.BytesIO(self.data))


class RunSummaryDict(dict[str, Any]):
    """W&B's ``run.summary`` (``wandb.apis.public``'s ``HTTPSummary``): a dict, and its
    ``_json_dict``, the dict itself as W&B's read snippets take it."""

    @property
    def _json_dict(self) -> dict[str, Any]:
        return dict(self)


def as_json(value: Any) -> Any:
    """``value`` as W&B's JSON gives it back: a whole float (523.0) as an int (523), in
    dicts and lists too."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= WHOLE_MAX:
        return int(value)
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


def _run_config(meta: dict[str, Any] | None, summary: RunSummary) -> dict[str, Any]:
    """The options as stored (nested dicts and lists kept), then the hparams not already there
    (W&B-style runs store their config flattened as hparams too: ``model.depth``)."""
    options = (meta or {}).get("options")
    config = dict(options) if isinstance(options, dict) else {}
    for key, value in summary.config.items():
        if key not in config and dig(config, key) is MISSING:
            config[key] = value
    return config


def _summary_dict(summary: RunSummary) -> RunSummaryDict:
    """W&B's ``run.summary`` of ``summary``, as its JSON gives it back."""
    return RunSummaryDict({key: as_json(value) for key, value in summary_of(summary).items()})


class ApiRun:
    """A run read from its store (see the module); :attr:`path` is where that store is.

    Its documents are decoded when first asked for (:meth:`lazily`): listing 100,000 runs
    holds each as a short text until then."""

    def __init__(
        self, name: str, source: Source, summary: RunSummary, meta: dict[str, Any] | None
    ) -> None:
        self.name = name
        self.source = source
        self.path = source.describe("").rstrip("/")
        self._load: Callable[[], Documents] | None = None
        self._documents: Documents | None = (summary, meta)

    @classmethod
    def lazily(cls, name: str, source: Source, load: Callable[[], Documents]) -> ApiRun:
        """The run whose summary and meta ``load`` gives, called once, when first needed."""
        run = cls.__new__(cls)
        run.name, run.source, run.path = name, source, source.describe("").rstrip("/")
        run._load, run._documents = load, None
        return run

    @property
    def run_summary(self) -> RunSummary:
        """The summary as read: the comparison picks runs by it (runset.compared)."""
        if self._documents is None:
            assert self._load is not None
            self._documents, self._load = self._load(), None
        return self._documents[0]

    @property
    def state(self) -> str:
        """finished, failed, stopped, running, or "no status yet"."""
        return self.run_summary.state

    @property
    def start(self) -> float | None:
        """Unix time, None when unknown."""
        return self.run_summary.started

    @property
    def duration(self) -> float | None:
        """Seconds from the start to the last update."""
        return self.run_summary.duration

    @property
    def step(self) -> int | None:
        """The last step the run's status names."""
        return self.run_summary.step

    @cached_property
    def config(self) -> dict[str, Any]:
        """The run's options as stored, then its hparams."""
        summary = self.run_summary
        assert self._documents is not None
        return _run_config(self._documents[1], summary)

    @cached_property
    def stats(self) -> dict[str, SeriesStats]:
        """Each series' count, last step and value, min and max (for a best-value table)."""
        return dict(self.run_summary.series)

    @cached_property
    def summary(self) -> RunSummaryDict:
        """Values as logged: text, dicts too (W&B's ``run.summary``)."""
        return _summary_dict(self.run_summary)

    def fields(self) -> Fields:
        """What a filter or an order looks at of this run (:mod:`.filters`); a run not decoded
        yet is decoded for it and not kept so (filtering 100,000 runs holds those it keeps)."""
        if self._documents is None and self._load is not None:
            summary, meta = self._load()
            return fields_of(summary, self.name, _run_config(meta, summary), _summary_dict(summary))
        return fields_of(self.run_summary, self.name, self.config, self.summary)

    @property
    def id(self) -> str:
        """W&B's run id: here the run's folder (its name unless renamed)."""
        where = PurePosixPath(self.path)
        return where.parent.name if where.name == "pickle" else where.name

    @property
    def created_at(self) -> str | None:
        """W&B's: when the run started, ISO 8601 in UTC (``2026-01-31T12:00:00Z``); None
        when unknown."""
        if self.start is None:
            return None
        when = datetime.datetime.fromtimestamp(self.start, datetime.UTC)
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")

    def __repr__(self) -> str:
        return f"<Run {self.name} ({self.state})>"

    def _table(self, keys: Sequence[str] | None) -> HistoryTable:
        if isinstance(keys, str):  # history("loss") would otherwise read as l, o, s, s
            keys = [keys]
        if keys is not None:  # a row's own columns are in every row: W&B takes them as asked
            keys = [key for key in keys if key not in ROW_KEYS]
        rows = table(read_series(self.source, keys))
        return rows if keys is None else rows.having(list(keys))

    def history(
        self, keys: Sequence[str] | None = None, samples: int | None = None, pandas: bool = True
    ) -> Any:
        """The run's points, a row a step: ``_step``, a column a series (NaN where it has no
        point; whole numbers as int64, as W&B's), ``_timestamp``, ``_runtime``. With ``keys``, those series, on the steps all of them have;
        with ``samples``, that many rows evenly spaced (W&B samples 500 by default; here
        every row unless asked). A pandas DataFrame when pandas is installed, else (or with
        ``pandas=False``) a list of dicts holding the series each row has."""
        rows = self._table(keys)
        if samples is not None:
            rows = rows.sampled(max(1, int(samples)))
        if pandas:
            try:
                import pandas as pd
            except ImportError:
                pass
            else:
                return pd.DataFrame(rows.columns(self.start))
        return list(rows.rows(self.start))

    def scan_history(
        self,
        keys: Sequence[str] | None = None,
        page_size: int = 1000,
        min_step: int | None = None,
        max_step: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every point, a dict a step keyed by series name with ``_step``, ``_timestamp`` and
        ``_runtime`` (W&B's arguments; ``page_size`` is accepted and unused: the store is read once)."""
        rows = self._table(keys)
        if min_step is not None or max_step is not None:
            low = rows.steps >= min_step if min_step is not None else True
            high = rows.steps < max_step if max_step is not None else True
            rows = rows.take(np.flatnonzero(low & high))
        return rows.rows(self.start)

    def _media(self) -> tuple[dict[str, list[Media]], dict[str, list[Media]]]:
        _history, _reader, update = read_store(self.source)
        images: dict[str, list[Media]] = {}
        for group, name, step, _epoch, wall, png, *captions in update.images:
            media = Media(step, wall, png, captions[0] if captions else [])
            images.setdefault(tag_of(group, name), []).append(media)
        texts: dict[str, list[Media]] = {}
        for kind, tag, step, wall, data in update.extras:
            if kind == "text":
                texts.setdefault(tag, []).append(Media(step, wall, data["text"]))
        return images, texts

    def images(self) -> dict[str, list[Media]]:
        """Every logged image by tag, in logged order (``.data``: PNG bytes, ``.image()``)."""
        return self._media()[0]

    def texts(self) -> dict[str, list[Media]]:
        """Every logged text by tag, in logged order (``.data``: the string)."""
        return self._media()[1]

    def tables(self) -> dict[str, list[LoggedTable]]:
        """Every logged W&B Table by key, in logged order (``.get_dataframe()``)."""
        return tables_of(read_store(self.source)[2].extras)

    def logged_artifacts(self) -> list[ApiArtifact]:
        """W&B's: every version of an artifact this run logged (its checkpoints among them), in
        logged order; versions counted across the runs beside it (:mod:`.artifacts`)."""
        return logged_artifacts(self.path, self.id, read_store(self.source)[2].extras)

    def used_artifacts(self) -> list[ApiArtifact]:
        """W&B's: the artifacts this run used (a resumed run's checkpoint), each the version
        its digest names."""
        return used_artifacts(self.path, read_store(self.source)[2].extras)
