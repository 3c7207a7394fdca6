"""A W&B-style module over the snapshot store: ``import remote_train_monitor.wandb as wandb``.

A script written against ``wandb`` runs with that one import changed:
``init``, ``log`` (W&B's ``step``/``commit`` rules), ``config``, ``summary``,
``finish``, ``alert``, ``Image``, ``Histogram``, ``Table``, ``define_metric``
(its ``summary=`` kept) and ``watch`` (gradient histograms, as W&B's).
The run (:class:`~integrations.wandb_run.Run`) is stored at
``<dir>/wandb/<project>/<name>/pickle``. Only global rank zero writes; other
ranks get a run that stores nothing.

This module owns which run is current: ``wandb.run``, ``wandb.config`` and
``wandb.summary`` follow the run ``init`` returned until it finishes; before
``init`` (and after ``finish``) they are W&B's pre-init objects, which raise W&B's
error when used. ``init`` while a run is active does what W&B's ``reinit`` says.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from run_core.launch_env import read_launch_env

from ._run import MonitorRun
from .wandb_artifact import Artifact
from .wandb_config import (
    Config,
    ConfigError,
    Error,
    PreInitObject,
    Settings,
    Summary,
    as_dict,
    before_init,
)
from .wandb_media import AlertLevel, Histogram, Image, Table
from .wandb_offline import (
    CommError,
    NotOffline,
    WandbUsageError,
    ensure_configured,
    login,
    require,
    setup,
    termerror,
    termlog,
    termsetup,
    termwarn,
)
from .wandb_run import Run

if TYPE_CHECKING:
    from .wandb_api import WandbApi as Api

__all__ = [
    "AlertLevel", "Api", "Artifact", "CommError", "Config", "ConfigError", "Error", "Histogram", "Image",
    "Run", "Settings", "Summary", "Table", "alert", "define_metric", "ensure_configured",
    "finish", "init", "log", "log_artifact", "log_model", "login", "mark_preempting", "patched", "pin_config_keys",
    "require", "save", "setup", "teardown", "termerror", "termlog", "termsetup", "termwarn",
    "unwatch", "use_artifact", "use_model", "watch",
]  # fmt: skip

log_ = logging.getLogger(__name__)

RUNS_DIR = "wandb"  # under init(dir=...), where W&B keeps its local files too
DEFAULT_PROJECT = "uncategorized"
REINIT = ("default", "return_previous", "finish_previous", "create_new")  # W&B's settings
_PRE_INIT = {
    "config": PreInitObject("wandb.config", Config),
    "summary": PreInitObject("wandb.summary", Summary),
}

# W&B's record of the libraries its integrations patched: none here.
patched: dict[str, list[Any]] = {"tensorboard": [], "keras": [], "gym": []}
_global_run: Run | None = None  # the run wandb.run names (init's, unless reinit="create_new")
_active: list[Run] = []  # runs started and maybe not finished yet, oldest first


def _in_notebook() -> bool:
    """W&B's test for its notebook default: an IPython shell runs (Jupyter, Colab, terminal)."""
    ipython = sys.modules.get("IPython")
    return getattr(ipython, "get_ipython", lambda: None)() is not None


def _reinit_rule(reinit: Any) -> str:
    """W&B's ``reinit`` (the argument, else ``WANDB_REINIT``) as what it does here:
    ``return_previous``, ``finish_previous`` or ``create_new``.

    True and False are W&B's older spellings of ``finish_previous`` and ``return_previous``;
    ``default`` is ``finish_previous`` in a notebook and ``return_previous`` in a script.
    """
    if reinit is None:
        reinit = os.environ.get("WANDB_REINIT", "default")
        reinit = {"true": True, "false": False}.get(reinit.lower(), reinit)
    rule = {True: "finish_previous", False: "return_previous"}.get(reinit, reinit)
    if rule not in REINIT:
        raise ValueError(
            "reinit must be 'default', 'return_previous', 'finish_previous', 'create_new', "
            f"True or False, not {reinit!r}"
        )
    if rule == "default":
        return "finish_previous" if _in_notebook() else "return_previous"
    return str(rule)


def _store_dir(root: Path, project: str, name: str | None, resume: Any) -> tuple[str, Path]:
    """The run's name and store: the name given, else a time stamp; a taken name is numbered
    unless the run resumes."""
    base = name or datetime.now().strftime("run-%Y%m%d_%H%M%S")
    candidate, number_ = base, 1
    while (root / project / candidate).exists() and not resume:
        number_ += 1
        candidate = f"{base}-{number_}"
    return candidate, root / project / candidate / "pickle"


def _settle_active(rule: str, reinit: Any) -> Run | None:
    """Apply ``rule`` (:func:`_reinit_rule`) to the runs still active: the latest of them
    when init is to return it (with W&B's warning), else None, the others finished if the
    rule says so."""
    _active[:] = [started for started in _active if not started.finished]
    if _active and rule == "return_previous":
        log_.warning(
            "wandb.init() called while a run is active and reinit is set to %r, so returning "
            "the previous run; call wandb.finish() first, or pass reinit='finish_previous', "
            "to start a new one",
            "default" if reinit is None else reinit,
        )
        return _active[-1]
    if rule == "finish_previous":
        while _active:
            _active.pop().finish()
    return None


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
    global _global_run
    rule = _reinit_rule(reinit)
    if (previous := _settle_active(rule, reinit)) is not None:
        return previous
    project = project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
    root = Path(dir or os.environ.get("WANDB_DIR") or ".") / RUNS_DIR
    name, store = _store_dir(root, project, name or os.environ.get("WANDB_NAME") or id, resume)
    mode = mode or os.environ.get("WANDB_MODE")
    launch = read_launch_env()
    monitor = None
    if mode != "disabled" and launch.is_rank_zero:  # other ranks: a Run that stores nothing
        monitor = MonitorRun(store, root, {}, remote_transfer_cmd, launch.world_size)
        if os.environ.get("WANDB_SILENT", "").lower() not in ("1", "true"):  # W&B's switch
            print(  # where the run is, as W&B prints it: the user needs the path to watch it
                f"wandb: run {name} is stored in {store}; watch it with "
                f"run-visualizer --pickle-dir {root / project}",
                file=sys.stderr,
            )
    run = Run(monitor, name, project, store)
    _active.append(run)
    if rule != "create_new":  # W&B's: a run made beside others is not wandb.run
        _global_run = run
    values = as_dict(config)
    if config_include_keys:
        values = {k: v for k, v in values.items() if k in config_include_keys}
    values = {k: v for k, v in values.items() if k not in (config_exclude_keys or ())}
    run.config.update(values, allow_val_change)
    return run


def _current_run() -> Run | None:
    """``wandb.run``: the run init made current, until it finishes."""
    return None if _global_run is None or _global_run.finished else _global_run


def _current(what: str) -> Run:
    run = _current_run()
    if run is None:
        before_init(what)
    return run


def log(data: Mapping[str, Any], step: int | None = None, commit: bool | None = None) -> None:
    """``run.log`` of the current run."""
    _current("wandb.log()").log(data, step, commit)


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the current run, if any (as W&B: a no-op without one)."""
    run = _current_run()
    if run is not None:
        run.finish(exit_code, quiet)


def teardown(exit_code: int | None = None) -> None:
    """Finish every run not finished yet, ``create_new``'s too (W&B's ``teardown``)."""
    while _active:
        _active.pop().finish(exit_code)


def alert(title: str, text: str, level: Any = None, wait_duration: Any = None) -> None:
    """``run.alert`` of the current run."""
    _current("wandb.alert()").alert(title, text, level, wait_duration)


def define_metric(name: str, step_metric: str | None = None, **kwargs: Any) -> None:
    """``run.define_metric`` of the current run."""
    _current("wandb.define_metric()").define_metric(name, step_metric, **kwargs)


def save(glob_str: str, base_path: str | None = None, policy: str = "live") -> list[str]:
    """``run.save`` of the current run."""
    return _current("wandb.save()").save(glob_str, base_path, policy)


def watch(models: Any = None, *args: Any, **kwargs: Any) -> list[Any]:
    """``run.watch`` of the current run."""
    return _current("wandb.watch()").watch(models, *args, **kwargs)


def unwatch(models: Any = None) -> None:
    """``run.unwatch`` of the current run."""
    _current("wandb.unwatch()").unwatch(models)


def mark_preempting() -> None:
    """``run.mark_preempting`` of the current run."""
    _current("wandb.mark_preempting()").mark_preempting()


def pin_config_keys(keys: Any = ()) -> None:
    """``run.pin_config_keys`` of the current run."""
    _current("wandb.pin_config_keys()").pin_config_keys(keys)


def log_artifact(
    artifact_or_path: Any,
    name: str | None = None,
    type: str | None = None,
    aliases: Any = None,
    tags: Any = None,
) -> Artifact:
    """``run.log_artifact`` of the current run."""
    return _current("wandb.log_artifact()").log_artifact(artifact_or_path, name, type, aliases)


def log_model(path: Any, name: str | None = None, aliases: Any = None) -> None:
    """``run.log_model`` of the current run."""
    _current("wandb.log_model()").log_model(path, name, aliases)


def use_artifact(artifact_or_name: Any, type: str | None = None, aliases: Any = None) -> Any:
    """``run.use_artifact`` of the current run."""
    return _current("wandb.use_artifact()").use_artifact(artifact_or_name, type, aliases)


def use_model(name: str) -> str:
    """``run.use_model`` of the current run."""
    return _current("wandb.use_model()").use_model(name)


# W&B's names this module spells otherwise (the project's own UsageError and join are others).
_WANDB_SPELLINGS: dict[str, Any] = {"join": finish, "UsageError": WandbUsageError}


def __getattr__(name: str) -> Any:
    """``wandb.run``, and ``wandb.config`` and ``wandb.summary``: the current run's, else
    W&B's pre-init objects (so ``from wandb import config`` before ``init`` keeps one, as
    with W&B); ``join`` and ``UsageError``; for another of W&B's names, :class:`NotOffline`."""
    if name == "run":
        return _current_run()
    if name == "Api":  # the reader, imported only when a script reads runs back
        from .wandb_api import WandbApi as Api

        return Api
    if name in _WANDB_SPELLINGS:
        return _WANDB_SPELLINGS[name]
    if name in _PRE_INIT:
        run = _current_run()
        return _PRE_INIT[name] if run is None else getattr(run, name)
    if name.startswith("_"):  # what import machinery and tools probe for: plainly absent
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise NotOffline(name)  # one of W&B's names, maybe: the error names it and the table


def __dir__() -> list[str]:
    return sorted({*globals(), "run", *_PRE_INIT, *_WANDB_SPELLINGS})
