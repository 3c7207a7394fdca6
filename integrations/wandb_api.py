"""``wandb.Api()`` under the W&B-style module: the project's read API
(:class:`visualizer.api.Api`) taking W&B's paths and W&B 0.31's defaults.

``Api().runs("entity/project")`` reads ``<WANDB_DIR or .>/wandb/<project>``, where
``wandb.init`` stored the runs, and ``Api().run("entity/project/run_id")`` (or
``.../runs/run_id``) the run's folder there; a path that exists, or an ``s3://`` one, is
read as it is. Runs are listed in W&B's order, ``+created_at`` (oldest first) unless
``order`` says otherwise. Imported when ``wandb.Api`` is first asked for: training never
imports the reader.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from visualizer.api import Api as RunsApi
from visualizer.api import ApiRun
from visualizer.api.artifacts import ApiArtifact

from .wandb import DEFAULT_PROJECT, RUNS_DIR
from .wandb_artifact import find_artifact

DEFAULT_ORDER = "+created_at"  # W&B 0.31's Api.runs: creation order, oldest first


def _root() -> Path:
    return Path(os.environ.get("WANDB_DIR") or ".") / RUNS_DIR


def local_path(path: str | None, one_run: bool) -> str:
    """Where W&B's ``path`` (``entity/project``, or ``entity/project[/runs]/run_id`` for one
    run) is stored by ``wandb.init``; an existing or ``s3://`` path, or one not stored
    there, as given."""
    text = str(path or "")
    if text.startswith("s3://") or (text and Path(text).exists()):
        return text
    parts = [part for part in text.strip("/").split("/") if part]
    if one_run and len(parts) >= 3 and parts[-2] == "runs":  # W&B's URL form
        del parts[-2]
    if one_run:
        run_id = parts[-1] if parts else ""
        project = parts[-2] if len(parts) >= 2 else _project()
        where = _root() / project / run_id
    else:
        where = _root() / (parts[-1] if parts else _project())
    return str(where) if where.exists() or not text else text


def _project() -> str:
    return os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT


class WandbApi(RunsApi):
    """W&B's ``wandb.Api(overrides=None, timeout=None, api_key=None)``, offline: the
    arguments about W&B's server are taken and unused."""

    def __init__(
        self,
        overrides: Mapping[str, Any] | None = None,
        timeout: int | None = None,
        api_key: str | None = None,
        s3_client: Any = None,
    ) -> None:
        super().__init__(s3_client)
        self.settings = dict(overrides or {})

    def runs(
        self,
        path: str | None = None,
        filters: Mapping[str, Any] | str | None = None,
        order: str | None = DEFAULT_ORDER,
        per_page: int = 50,
        include_sweeps: bool = False,
        lazy: bool = True,
    ) -> list[ApiRun]:
        """The runs of ``path`` (W&B's ``entity/project``), by ``filters``, in ``order``."""
        return super().runs(local_path(path, one_run=False), filters, order or DEFAULT_ORDER)

    def run(self, path: str = "") -> ApiRun:
        """The run at W&B's ``entity/project/run_id``."""
        return super().run(local_path(path, one_run=True))

    def artifact(self, name: str, type: str | None = None) -> ApiArtifact:
        """W&B's ``Api().artifact("entity/project/name:version or alias")``: that version,
        among the artifacts the project's runs logged (CommError naming it if none)."""
        parts = name.strip("/").split("/")
        project = parts[-2] if len(parts) >= 2 else _project()
        return find_artifact(_root() / project, name, type)
