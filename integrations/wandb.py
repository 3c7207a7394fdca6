"""A W&B-style module over the snapshot store: ``import remote_train_monitor.wandb as wandb``.

A script written against ``wandb`` runs with that one import changed:
``init``, ``log`` (W&B's ``step``/``commit`` rules), ``config``, ``summary``,
``finish``, ``alert``, ``Image``, ``Histogram``, ``Table``, ``define_metric``
(its ``summary=`` kept) and ``watch`` (gradient histograms, as W&B's).
The run is stored at ``<dir>/wandb/<project>/<name>/pickle``; each logged key
is stored under its own name, as a SummaryWriter tag, at W&B's step. Only
global rank zero writes; other ranks get a run that stores nothing.
At ``finish`` the config and the numeric summary become the run's row of the
hparams table (W&B's runs table), and the config is the run's options.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from snapshot_store.endings import ended_state
from snapshot_store.rank import read_launch_env
from snapshot_store.schema import INT64_MAX, int64_step
from snapshot_store.values import plain
from trainer.interrupts import close_at_exit

from . import wandb_watch
from ._run import MonitorRun
from .wandb_config import Config, ConfigError, Error, Settings, Summary, as_dict, login
from .wandb_media import AlertLevel, Histogram, Image, Table, flatten, number, store_value

__all__ = [
    "AlertLevel", "Config", "ConfigError", "Error", "Histogram", "Image", "Run", "Settings",
    "Summary", "Table", "alert", "define_metric", "finish", "init", "log", "login", "save",
    "watch",
]  # fmt: skip

log_ = logging.getLogger(__name__)

RUNS_DIR = "wandb"  # under init(dir=...), where W&B keeps its local files too
DEFAULT_PROJECT = "uncategorized"
DEFAULT_ALERT_WAIT = timedelta(minutes=1)  # W&B's: one alert per title per minute
_SUMMARY_OPS: dict[str, Callable[[float, float], float]] = {
    "min": min,
    "max": max,
    "last": lambda old, new: new,
    "first": lambda old, new: old,
}


class Run:
    """One run, as ``wandb.init`` returns it: ``log``, ``config``, ``summary``, ``finish``..."""

    def __init__(
        self, monitor: MonitorRun | None, name: str, project: str, store_dir: Path
    ) -> None:
        self._monitor = monitor
        self.name = self.id = name
        self.project = project
        # W&B's run.dir: where a script puts files for the run (a model it saves, say).
        files = store_dir.parent / "files" if monitor is not None else Path(tempfile.mkdtemp())
        files.mkdir(parents=True, exist_ok=True)
        self.dir = str(files)
        self._saved: list[Path] = []
        self._hooks: list[Any] = []  # watch()'s
        self.url: str | None = None
        self.config = Config(self._store_config)
        self.summary = Summary()
        self.step = 0
        self._metrics: list[tuple[str, list[str]]] = []  # define_metric(name, summary=...)
        self._alerts_at: dict[str, float] = {}
        self.finished = False
        if monitor is not None:
            close_at_exit(self, self._close)

    @property
    def _writer(self) -> Any:
        return None if self._monitor is None or self.finished else self._monitor.writer

    def _store_config(self) -> None:
        if self._writer is not None and self._writer.recorder.is_rank_zero:
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
        flat = flatten(data)  # a ValueError past MAX_DEPTH levels, before anything changes
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
            self.step = step
        writer = self._writer
        for key, value in flat.items():
            scalar = number(value)  # the common case, stored without store_value's dispatch
            if writer is not None and scalar is not None:
                writer.add_scalar(key, scalar, self.step)
            elif writer is not None and not store_value(writer, key, value, self.step):
                log_.warning("wandb.log(%r): a %s is not stored", key, type(value).__name__)
            self._summarize(key, value, scalar)
        if (step is None and commit is None) or commit:
            self.step += 1

    def _summarize(self, key: str, value: Any, new: float | None) -> None:
        ops = None
        if self._metrics:
            ops = next((ops for pattern, ops in self._metrics if fnmatch(key, pattern)), None)
        if key in self.summary._explicit or ops == ["none"]:
            return
        if ops is None or new is None:
            self.summary._items[key] = new if new is not None else value
            return
        old = self.summary._items.get(key)
        old = old if isinstance(old, dict) else {}
        self.summary._items[key] = {
            op: new if op not in old else _SUMMARY_OPS.get(op, _SUMMARY_OPS["last"])(old[op], new)
            for op in ops
        }

    def define_metric(
        self, name: str, step_metric: str | None = None, summary: str | None = None, **kwargs: Any
    ) -> None:
        """Keep ``summary`` (``min``, ``max``, ``first``, ``last``, ``none``, comma-separated)
        for keys matching ``name``; the chart's x axis (``step_metric``) is the viewer's choice."""
        if summary:
            self._metrics.append((name, [op.strip() for op in summary.split(",")]))

    def watch(self, models: Any = None, *args: Any, **kwargs: Any) -> list[Any]:
        """Store histograms of ``models``' gradients (or parameters), as W&B (wandb_watch.py)."""
        return wandb_watch.watch(self, models, *args, **kwargs)

    def unwatch(self, models: Any = None) -> None:
        """Remove every hook :meth:`watch` set."""
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def _histogram(self, tag: str, tensor: Any) -> None:
        if self._writer is not None:
            self._writer.add_histogram(tag, tensor.detach(), self.step, bins=wandb_watch.BINS)

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

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Store the summary, close the store as ``exit_code`` says (:func:`ended_state`:
        None and 0 finished, 130 and 143 stopped, any other failed)."""
        self._close(ended_state(exit_code))

    def _close(self, state: str) -> None:
        global run
        self.unwatch()
        writer = self._writer
        if writer is None:
            self.finished = True
            return
        summary = flatten(self.summary.as_dict())  # define_metric's {"min": ...} as "key.min"
        metrics = {k: float(v) for k, v in summary.items() if number(v) is not None}
        config = flatten(self.config.as_dict())
        last_step = min(self.step, INT64_MAX)  # one past a last step of INT64_MAX
        writer.add_hparams_row(config, metrics, run_name=self.name, global_step=last_step)
        self.finished = True
        self._monitor.send([p for p in self._saved if p.exists()])  # type: ignore[union-attr]
        self._monitor.close(state)  # type: ignore[union-attr]
        if run is self:
            run = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc_val: BaseException | None, exc_tb: Any) -> None:
        self._close(ended_state(exc_val))


run: Run | None = None


def _store_dir(root: Path, project: str, name: str | None, resume: Any) -> tuple[str, Path]:
    """The run's name and store: the name given, else a time stamp; a taken name is numbered
    unless the run resumes."""
    base = name or datetime.now().strftime("run-%Y%m%d_%H%M%S")
    candidate, number_ = base, 1
    while (root / project / candidate).exists() and not resume:
        number_ += 1
        candidate = f"{base}-{number_}"
    return candidate, root / project / candidate / "pickle"


def init(
    entity: str | None = None,
    project: str | None = None,
    dir: str | os.PathLike[str] | None = None,
    id: str | None = None,
    name: str | None = None,
    notes: str | None = None,
    tags: Any = None,
    config: Any = None,
    config_exclude_keys: list[str] | None = None,
    config_include_keys: list[str] | None = None,
    allow_val_change: bool | None = None,
    group: str | None = None,
    job_type: str | None = None,
    mode: str | None = None,
    reinit: Any = None,
    resume: Any = None,
    remote_transfer_cmd: str | None = None,
    **ignored: Any,
) -> Run:
    """Start a run (W&B's arguments; those about W&B's servers are accepted and ignored).

    ``remote_transfer_cmd`` (ours) is a ``module.func`` hook each store file is handed to.
    """
    global run
    if run is not None and not run.finished:
        if reinit in (None, False, "default", "return_previous"):
            return run
        if reinit in (True, "finish_previous"):
            run.finish()
    project = project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
    root = Path(dir or os.environ.get("WANDB_DIR") or ".") / RUNS_DIR
    name, store = _store_dir(root, project, name or os.environ.get("WANDB_NAME") or id, resume)
    mode = mode or os.environ.get("WANDB_MODE")
    launch = read_launch_env()
    monitor = None
    if mode != "disabled" and launch.rank == 0:
        monitor = MonitorRun(store, root, {}, remote_transfer_cmd, launch.world_size)
        if os.environ.get("WANDB_SILENT", "").lower() not in ("1", "true"):  # W&B's switch
            print(  # where the run is, as W&B prints it: the user needs the path to watch it
                f"wandb: run {name} is stored in {store}; watch it with "
                f"run-visualizer --pickle-dir {root / project}",
                file=sys.stderr,
            )
    run = Run(monitor, name, project, store)
    values = as_dict(config)
    if config_include_keys:
        values = {k: v for k, v in values.items() if k in config_include_keys}
    values = {k: v for k, v in values.items() if k not in (config_exclude_keys or ())}
    run.config.update(values, allow_val_change)
    return run


def _current() -> Run:
    if run is None:
        raise Error("You must call wandb.init() before using the run (wandb.log, wandb.config...)")
    return run


def log(data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    """``run.log`` of the current run."""
    _current().log(data, step, commit)


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the current run, if any (as W&B: a no-op without one)."""
    if run is not None:
        run.finish(exit_code, quiet)


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
    """``run.alert`` of the current run."""
    _current().alert(title, text, level, wait_duration)


def define_metric(name: str, step_metric: str | None = None, **kwargs: Any) -> None:
    """``run.define_metric`` of the current run."""
    _current().define_metric(name, step_metric, **kwargs)


def save(glob_str: str, base_path: str | None = None, policy: str = "live") -> list[str]:
    """``run.save`` of the current run."""
    return _current().save(glob_str, base_path, policy)


def watch(models: Any = None, *args: Any, **kwargs: Any) -> list[Any]:
    """``run.watch`` of the current run."""
    return _current().watch(models, *args, **kwargs)


def __getattr__(name: str) -> Any:
    """``wandb.config`` and ``wandb.summary``: the current run's."""
    if name in ("config", "summary"):
        return getattr(_current(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
