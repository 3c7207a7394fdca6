"""W&B's ``Run``: ``log`` with W&B's step and commit rules, ``config``, ``summary``,
``define_metric``, ``alert``, ``save``, ``watch`` and ``finish``, over one store.

Each logged key is stored under its own name, as a SummaryWriter tag, at W&B's step.
The config is the run's options; the summary, as the structures logged (text, dicts,
lists), is the status document's ``summary``, sent with the logging at most once a
second (a viewer's runs table shows a live run's summary, as W&B's does) and at
``finish``, where the config and the numeric summary also become the run's row of the
hparams table (W&B's runs table).
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from run_core.endings import ended_state
from run_core.values import plain
from snapshot_store.format.schema import INT64_MAX, int64_step
from trainer.training.interrupts import close_at_exit

from . import wandb_watch
from ._run import MonitorRun
from .wandb_artifact import Artifact, artifact_of, find_artifact
from .wandb_config import Config, Summary
from .wandb_media import AlertLevel, flatten, number, store_value, summary_document
from .wandb_metrics import Metrics

if TYPE_CHECKING:
    from visualizer.api.artifacts import ApiArtifact, Logged

log_ = logging.getLogger(__name__)

DEFAULT_ALERT_WAIT = timedelta(minutes=1)  # W&B's: one alert per title per minute
# The summary reaches the status document with the logging at most this often: the status
# is itself rewritten at most once a second, so sending it more often would be lost work.
SUMMARY_EVERY_S = 1.0


class Run:
    """One run, as ``wandb.init`` returns it: ``log``, ``config``, ``summary``, ``finish``..."""

    def __init__(
        self, monitor: MonitorRun | None, name: str, project: str, store_dir: Path
    ) -> None:
        self._monitor = monitor
        self._name = self.id = name
        self.project = project
        # W&B's run.dir: where a script puts files for the run (a model it saves, say).
        files = store_dir.parent / "files" if monitor is not None else Path(tempfile.mkdtemp())
        files.mkdir(parents=True, exist_ok=True)
        self.dir = str(files)
        self._saved: list[Path] = []
        self._run_dir = store_dir.parent
        self._artifacts: list[Logged] = []  # its artifact records (log_artifact's)
        self._hooks: list[Any] = []  # watch()'s
        # watch()'s histograms of the open step, by tag: W&B's history row keeps the last
        # one a tag gets at a step, so a hook firing twice in a step replaces its first.
        self._watched: dict[str, Any] = {}
        self.url: str | None = None
        self.config = Config(self._store_config)
        self.summary = Summary()
        self._summary_sent_at = -math.inf  # time.monotonic() of the last one sent
        self.step = 0
        self._metrics = Metrics()  # define_metric's summary kinds
        self._alerts_at: dict[str, float] = {}
        self.finished = False
        if monitor is not None:
            close_at_exit(self, self._close)

    @property
    def _writer(self) -> Any:
        return None if self._monitor is None or self.finished else self._monitor.writer

    @property
    def name(self) -> str:
        """The run's shown name; set it (W&B's ``run.name = ...``) and the runs table, the Api
        and the export list the run under it; its folder and :attr:`id` stay."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)
        if self._writer is not None:
            self._monitor.set_options(None, self._name)  # type: ignore[union-attr]

    def _store_config(self) -> None:
        if self._writer is not None:  # a writer only where wandb.init opened one (rank 0)
            self._monitor.set_options(plain(self.config.as_dict()))  # type: ignore[union-attr]

    def log(
        self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None
    ) -> None:
        """Store ``data`` at the current step; W&B's rules decide the step.

        Each call without ``step`` or ``commit`` is a step of its own; ``commit=False``
        adds to the current step; ``step=N`` moves to step N (a lower N is dropped with
        one warning, as W&B drops it; one outside int64 raises ValueError) and, without
        ``commit=True``, stays there.
        """
        if not isinstance(data, Mapping):
            raise TypeError("wandb.log must be passed a dictionary")
        if any(not isinstance(key, str) for key in data):
            raise TypeError("Key values passed to `wandb.log` must be strings.")
        flat = flatten(data)  # a ValueError past MAX_DICT_DEPTH levels, before anything changes
        if step is not None:
            step = int64_step(step)  # TensorBoard's ValueError past int64, before any change
            if step < self.step:
                log_.warning(
                    "Tried to log to step %d that is less than the current step %d. Steps must "
                    "be monotonically increasing, so this data will be ignored.",
                    step,
                    self.step,
                )
                return
            self._move_to(step)
        writer = self._writer
        for key, value in flat.items():
            scalar = number(value)  # the common case, stored without store_value's dispatch
            if writer is not None and scalar is not None:
                writer.add_scalar(key, scalar, self.step)
            elif writer is not None and not store_value(writer, key, value, self.step):
                log_.warning("wandb.log(%r): a %s is not stored", key, type(value).__name__)
            self._summarize(key, value, scalar)
        if (step is None and commit is None) or commit:
            self._move_to(self.step + 1)
        if writer is not None and time.monotonic() - self._summary_sent_at >= SUMMARY_EVERY_S:
            self._send_summary()

    def _send_summary(self) -> None:
        """The summary as it is now into the status document (written within a second)."""
        self._summary_sent_at = time.monotonic()
        self._writer.recorder.set_status(summary=summary_document(self.summary.as_dict()))

    def _move_to(self, step: int) -> None:
        """Make ``step`` the current step, storing watch()'s histograms at the step left.

        The step after int64's last is no step: the run stays at the last, where remembering
        it made every later log, alert and Table raise StepRangeError.
        """
        step = min(step, INT64_MAX)
        if step != self.step:
            self._store_watched()
        self.step = step

    def _store_watched(self) -> None:
        if self._writer is not None:
            for tag, tensor in self._watched.items():
                self._writer.add_histogram(tag, tensor, self.step, bins=wandb_watch.BINS)
        self._watched.clear()

    def _summarize(self, key: str, value: Any, new: float | None) -> None:
        if key in self.summary._explicit:
            return
        kinds = self._metrics.kinds_for(key)
        if kinds is not None and "none" in kinds:
            return
        if not kinds or new is None:
            self.summary._items[key] = new if new is not None else value
            return
        old = self.summary._items.get(key)
        self.summary._items[key] = self._metrics.summarize(key, kinds, old, new)

    def define_metric(
        self,
        name: str,
        step_metric: Any = None,
        step_sync: bool | None = None,
        hidden: bool | None = None,
        summary: str | None = None,
        overwrite: bool | None = None,
    ) -> None:
        """Keep ``summary``'s kinds (``min``, ``max``, ``mean``, ``last``, ``first``, ``copy``,
        ``none``; comma-separated, added to the name's earlier ones) for keys matching
        ``name`` (:mod:`.wandb_metrics`); the chart's x axis (``step_metric``) is the viewer's."""
        self._metrics.define(name, summary, overwrite)

    def watch(self, models: Any = None, *args: Any, **kwargs: Any) -> list[Any]:
        """Store histograms of ``models``' gradients (or parameters), as W&B (wandb_watch.py)."""
        return wandb_watch.watch_models(self, models, *args, **kwargs)

    def unwatch(self, models: Any = None) -> None:
        """Remove every hook :meth:`watch` set."""
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def mark_preempting(self) -> None:
        """W&B's: tells its server the run is about to be preempted; nothing to tell offline."""

    def pin_config_keys(self, keys: Any = ()) -> None:
        """W&B's: config keys its run page shows first; the config is stored as it is."""

    def _label(self, **labels: Any) -> None:
        """W&B's telemetry label (Hugging Face's ``WandbCallback`` sets one): nothing to send."""

    def _histogram(self, tag: str, tensor: Any) -> None:
        """Keep ``tensor`` (a copy: training changes it) as ``tag``'s histogram of this step."""
        if self._writer is not None:
            self._watched[tag] = tensor.detach().clone()

    def alert(
        self,
        title: str,
        text: str,
        level: str | AlertLevel | None = None,
        wait_duration: float | timedelta | None = None,
    ) -> None:
        """Store an alert record (one per ``title`` per ``wait_duration``, default a minute)."""
        level_name = str(level or AlertLevel.INFO)
        if level_name not in set(AlertLevel):
            raise ValueError("level must be one of 'INFO', 'WARN', or 'ERROR'")
        wait = wait_duration or DEFAULT_ALERT_WAIT
        seconds = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
        now = time.monotonic()
        if now - self._alerts_at.get(title, -math.inf) < seconds:
            return
        self._alerts_at[title] = now
        if self._writer is not None:
            data = {"text": str(text), "level": level_name}
            self._writer.recorder.log_record("alert", str(title), data, self.step)

    def save(self, glob_str: str, base_path: str | None = None, policy: str = "live") -> list[str]:
        """Copy the files ``glob_str`` matches into :attr:`dir` and hand them to the transfer
        hook (again at ``finish``); returns their paths there."""
        saved = []
        pattern = Path(glob_str)
        anchor = Path(pattern.anchor or ".")  # Path.glob takes relative patterns only
        for source in sorted(anchor.glob(str(pattern.relative_to(pattern.anchor)))):
            relative = source.relative_to(base_path) if base_path else Path(source.name)
            target = Path(self.dir) / relative
            if source.resolve() != target.resolve():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            saved.append(target)
        if self._writer is not None:
            self._saved += [p for p in saved if p not in self._saved]
            self._monitor.send(saved)  # type: ignore[union-attr]
        return [str(p) for p in saved]

    def log_artifact(
        self,
        artifact_or_path: Any,
        name: str | None = None,
        type: str | None = None,
        aliases: Any = None,
        tags: Any = None,
    ) -> Artifact:
        """W&B's: copy the artifact's files into the store, record it and hand the files to
        the transfer hook (:mod:`.wandb_artifact`)."""
        artifact = artifact_of(artifact_or_path, name, type, self.id)
        if self._writer is not None:
            recorder = self._writer.recorder
            copied = artifact.store(self._run_dir, recorder, self.step, aliases, self._artifacts)
            self._monitor.send(copied)  # type: ignore[union-attr]
        return artifact

    def log_model(self, path: Any, name: str | None = None, aliases: Any = None) -> None:
        """W&B's: ``log_artifact`` of type ``model``."""
        self.log_artifact(path, name, "model", aliases)

    def use_artifact(
        self,
        artifact_or_name: Any,
        type: str | None = None,
        aliases: Any = None,
        use_as: Any = None,
    ) -> ApiArtifact:
        """W&B's (offline here too): the version named (``name``, ``name:v0``, ``name:latest``,
        ``entity/project/name:alias``, or a logged :class:`Artifact`) among the project's runs,
        recorded as used; its ``download()`` copies the files."""
        given = isinstance(artifact_or_name, Artifact)
        spec = artifact_or_name._name if given else str(artifact_or_name)
        digest = artifact_or_name.digest if given else ""
        runs_dir = self._run_dir.parent
        found = find_artifact(runs_dir, spec, type, self._artifacts, self._run_dir, digest)
        if self._writer is not None:
            where = (runs_dir / found.run).resolve()
            stored = [
                e.local_path.relative_to(where).as_posix() for e in found.entries if e.local_path
            ]
            data = {"name": found.base_name, "version": found.version, "digest": found.digest,
                    "run": found.run, "stored": stored}  # fmt: skip
            self._writer.recorder.log_record("artifact_use", found.base_name, data, self.step)
        return found

    def use_model(self, name: str) -> str:
        """W&B's: the files of model artifact ``name`` downloaded; their dir."""
        return self.use_artifact(name).download()

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Store the summary, close the store as ``exit_code`` says (:func:`ended_state`:
        None and 0 finished, 130 and 143 stopped, any other failed)."""
        self._close(ended_state(exit_code))

    def _close(self, state: str) -> None:
        self.unwatch()
        self._store_watched()  # the open step's, as W&B's finish commits its last row
        writer = self._writer
        if writer is None:
            self.finished = True
            return
        summary = flatten(self.summary.as_dict())  # define_metric's {"min": ...} as "key.min"
        metrics = {k: float(v) for k, v in summary.items() if number(v) is not None}
        config = flatten(self.config.as_dict())
        last_step = min(self.step, INT64_MAX)  # one past a last step of INT64_MAX
        writer.add_hparams_row(config, metrics, run_name=self.name, global_step=last_step)
        self._send_summary()
        self.finished = True
        self._monitor.send([p for p in self._saved if p.exists()])  # type: ignore[union-attr]
        self._monitor.close(state)  # type: ignore[union-attr]

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc_val: BaseException | None, exc_tb: Any) -> None:
        self._close(ended_state(exc_val))
