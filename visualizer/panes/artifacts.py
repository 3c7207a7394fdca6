"""A run's artifacts pane: what it logged (its checkpoints among them) and what it used.

Each version a row: ``<name>:v<N>``, type, the step it was logged at, the metric it was
saved at (a checkpoint's monitored validation score), its size and aliases. Then the
artifacts the run used, each linked to the run that logged it. Versions are counted
within the run here (the Api counts them across the runs dir: ``Api().run(...)
.logged_artifacts()``). Every cell is escaped: a store's text is never markup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from run_core.values import amount
from snapshot_store.format.kinds import ExtraRecord
from visualizer import markup
from visualizer.api.artifacts import ApiArtifact, Logged, artifact_versions
from visualizer.markup import Html

from .hparams import budgeted, table_row

ARTIFACTS_WIN = "extra_artifacts"
ARTIFACT_DATA = "all of them: Api().run(...).logged_artifacts()"
LOGGED_HEAD = ["artifact", "type", "step", "metric", "size", "aliases"]
USED_HEAD = ["used artifact", "logged by", "digest"]


def _metric(metadata: dict[str, Any]) -> str:
    """The metric a checkpoint was saved at: ``loss 0.3125`` (``-`` when none)."""
    score = metadata.get("score")
    if not isinstance(score, int | float) or isinstance(score, bool):
        return "-"
    return f"{metadata.get('monitor', 'score')} {score:.6g}"


def _logged_row(artifact: ApiArtifact) -> Html:
    step = artifact.metadata.get("step", artifact.step)
    cells = [artifact.name, artifact.type, step, _metric(artifact.metadata)]
    return table_row([*cells, amount(artifact.size), ", ".join(artifact.aliases) or "-"])


def _used_row(use: ExtraRecord, run: str, link: Callable[[str], str] | None) -> Html:
    data = use[4]
    version = f":{data['version']}" if data["version"] else ""
    by: object = data["run"] or "-"
    if data["run"] == run:
        by = "this run"
    elif data["run"] and link is not None:
        by = markup.link(link(data["run"]), data["run"])
    return table_row([f"{data['name']}{version}", by, data["digest"][:12]])


def artifacts_pane(
    records: list[ExtraRecord], run: str, link: Callable[[str], str] | None = None
) -> Html:
    """The pane's HTML for run ``run``'s ``artifact`` and ``artifact_use`` ``records``;
    ``link(run)``: the page of another run, for what it logged and this run used."""
    logged: list[Logged] = [(run, None, r) for r in records if r[0] == "artifact"]
    uses = [record for record in records if record[0] == "artifact_use"]
    parts: list[object] = []
    versions = artifact_versions(logged)
    if versions:
        rows = budgeted(
            map(_logged_row, reversed(versions)), len(versions), "versions", ARTIFACT_DATA
        )
        parts.append(markup.element("table", table_row(LOGGED_HEAD, "th"), *rows))
    if uses:
        digests = {(a.base_name, a.digest): a.version for a in versions}
        named = [_named(use, digests) for use in uses]
        rows = [_used_row(use, run, link) for use in reversed(named)]
        parts.append(markup.element("table", table_row(USED_HEAD, "th"), *rows))
    return markup.join(*parts) if parts else markup.element("p", "no artifacts")


def _named(use: ExtraRecord, digests: dict[tuple[str, str], str]) -> ExtraRecord:
    """``use`` with its version when this run logged the contents it names."""
    kind, tag, step, wall, data = use
    version = data["version"] or digests.get((data["name"], data["digest"]), "")
    return kind, tag, step, wall, {**data, "version": version}
