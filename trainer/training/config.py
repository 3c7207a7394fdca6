"""Every option of a run, its default and its check, in one place.

:class:`RunConfig` holds the options of the training loop, the same for
``trainer train``, ``trainer launch`` and :func:`trainer.fit`; :class:`RecipeConfig`
holds what ``trainer train`` needs to build a model from an image folder. The
command-line parser is generated from these fields (:mod:`trainer.command.options`), so
a default or a check can not differ between entry points.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run_core.redaction import redact_text
from trainer.training.option_checks import (
    Check,
    alert_rules,
    at_least,
    gpu_ids,
    one_of,
    plain_name,
    server_without_login,
    visdom_env_name,
    whole_number,
)
from transfer_plugins.runner import TRANSFER_DRAIN_S

AMP_MODES = ("off", "bf16", "fp16")
MONITOR_MODES = ("min", "max")
DISK_FULL_MODES = ("stop", "continue")
# Spellings users bring from the seeds (Catalyst's num_epochs, DeepLIIF's n_epochs).
ALIASES = {"n_epochs": "num_epochs", "epochs": "num_epochs"}


class UsageError(Exception):
    """Bad input found before training; printed as one line, exit status 2."""


class OptionError(ValueError):
    """An option value that can not work; names the option and what is wrong."""

    def __init__(self, name: str, value: Any, problem: str) -> None:
        self.name, self.value, self.problem = name, value, problem
        # The message is printed and logged: a refused value may hold a password or a token.
        super().__init__(redact_text(f"{name}={value!r}: {problem}"))


def option(default: Any, help: str, check: Check | None = None, **cli: Any) -> Any:
    """A config field: its default, the help the CLI shows, its check and CLI details.

    ``cli`` may hold ``group`` (help section), ``flag`` (a store_true switch),
    ``kind`` (the argparse type), ``choices``, ``metavar``, ``append`` (repeatable),
    ``aliases`` (more spellings), ``command_line=False`` (no CLI option).
    """
    return field(default=default, metadata={"help": help, "check": check, **cli})


# --- the configurations --------------------------------------------------------------------------


class Checked:
    """Runs every field's check after construction: an invalid config can not exist."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            check = f.metadata.get("check")
            value = getattr(self, f.name)
            problem = check(value) if check is not None else None
            if f.metadata.get("kind") is int and not f.metadata.get("append"):
                problem = problem or whole_number(value)
            if problem:
                raise OptionError(f.name, value, problem)


@dataclass(frozen=True)
class RunConfig(Checked):
    """Options of the training loop (``trainer train``, ``trainer launch`` and ``fit``)."""

    name: str = option(
        "experiment", "run name: the run dir is CHECKPOINTS_DIR/NAME", plain_name, group="run"
    )
    checkpoints_dir: str = option(
        "./checkpoints", "where run dirs (checkpoints, loss_log.txt, pickle/ store) go", group="run"
    )
    gpu_ids: tuple[int, ...] | None = option(
        None,
        "repeatable; -1 = CPU. Under a launcher each process uses gpu_ids[local_rank]; "
        "several ids without one use DataParallel (default: GPU local_rank if CUDA is "
        "available, else CPU)",
        gpu_ids,
        group="run",
        kind=int,
        append=True,
        metavar="ID",
    )
    seed: int = option(
        0, "rank r seeds SEED+r; the sampler shuffles with SEED", group="run", kind=int
    )
    continue_train: bool = option(
        False,
        "resume from CHECKPOINTS_DIR/NAME/latest.pth (model, optimizer, schedule, step, RNG)",
        group="run",
        flag=True,
    )
    amp: str = option(
        "off",
        "mixed precision autocast (fp16 needs a GPU)",
        one_of(*AMP_MODES),
        group="run",
        choices=AMP_MODES,
    )
    num_workers: int = option(0, "DataLoader worker processes", at_least(0), group="data", kind=int)
    batch_size: int = option(
        32,
        "per process; the effective batch size is this times the number of processes",
        at_least(1),
        group="optimisation",
        kind=int,
    )
    num_epochs: int = option(
        10,
        "epochs to train, in total (counting those of a resumed run)",
        at_least(1),
        group="optimisation",
        kind=int,
        aliases=("--n-epochs", "--n_epochs", "--epochs"),
    )
    patience: int = option(
        0,
        "early stopping: epochs without improvement of the monitored validation score (0: never)",
        at_least(0),
        group="optimisation",
        kind=int,
    )
    min_delta: float = option(
        0.0,
        "early stopping: smallest change that counts as an improvement",
        at_least(0),
        group="optimisation",
        kind=float,
    )
    monitor: str = option(
        "loss", "validation score for the best checkpoint and early stopping", group="optimisation"
    )
    mode: str = option(
        "min",
        "whether the monitored score improves by going down or up",
        one_of(*MONITOR_MODES),
        group="optimisation",
        choices=MONITOR_MODES,
    )
    print_freq: int = option(
        10,
        "steps between recorded (all-rank averaged) train losses",
        at_least(1),
        group="logging",
        kind=int,
    )
    display_freq: int = option(
        50,
        "steps between recorded prediction images (0: never)",
        at_least(0),
        group="logging",
        kind=int,
    )
    save_epoch_freq: int = option(
        5,
        "epochs between epoch_N.pth checkpoints (latest.pth: every epoch)",
        at_least(0),
        group="logging",
        kind=int,
    )
    save_latest_freq: int = option(
        0,
        "also save latest.pth every this many steps, for mid-epoch resume (0: off)",
        at_least(0),
        group="logging",
        kind=int,
    )
    on_disk_full: str = option(
        "stop",
        "when a checkpoint does not fit on the disk: stop (keeping the last good one, exit 1) "
        "or continue training without checkpoints until space frees up",
        one_of(*DISK_FULL_MODES),
        group="logging",
        choices=DISK_FULL_MODES,
    )
    remote: bool = option(
        False,
        "True: only write the snapshot store, for a visualizer elsewhere; "
        "False: also show the plots live in a local visdom",
        group="logging",
        kind="bool",
        metavar="{True,False}",
    )
    remote_transfer_cmd: str | None = option(
        None,
        "a function called with the path of every written file (e.g. mysave.save_to_s3, "
        "with mysave.py in the working directory)",
        group="logging",
        metavar="MODULE.FUNC",
    )
    remote_transfer_wait: float = option(
        TRANSFER_DRAIN_S,
        "at exit, wait up to this many seconds for the hook to send what is left, then list "
        "the files not sent with the command that sends them (a job's time limit: lower it)",
        at_least(0),
        group="logging",
        kind=float,
        metavar="SECONDS",
    )
    alert_rule: tuple[str, ...] = option(
        (),
        "judge this rule on the run's writer thread and send each alert once, with no viewer "
        "running ('val/loss>2.5', 'diverging:train/loss', 'stall:minutes=10': docs/viewer.md); "
        "sent to --alert-cmd and/or $ALERT_WEBHOOK_URL; repeatable",
        alert_rules,
        group="alerts",
        append=True,
        metavar="RULE",
    )
    alert_cmd: str | None = option(
        None,
        "call FUNC(alert) for each alert the run's writer finds (alert: a dict of run, event, "
        "detail, text, ...), like --remote-transfer-cmd",
        group="alerts",
        metavar="MODULE.FUNC",
    )
    display_server: str = option(
        "127.0.0.1",
        "visdom server for live plots (--remote False); its login comes from VISDOM_USERNAME "
        "and VISDOM_PASSWORD",
        server_without_login,
        group="logging",
    )
    display_port: int = option(
        8097,
        "visdom port for live plots (--remote False)",
        lambda v: at_least(1)(v) or (None if v <= 65535 else "must be a port, 1 to 65535"),
        group="logging",
        kind=int,
    )
    display_env: str | None = option(
        None, "visdom env for live plots (default: NAME)", visdom_env_name, group="logging"
    )
    system_metrics_interval: float = option(
        10.0,
        "seconds between GPU and host metrics (GPU utilisation and memory, CPU, RSS, data "
        "loader wait) in the run's system window, sampled on rank 0 off the training thread "
        "(0: off)",
        at_least(0),
        group="logging",
        kind=float,
        metavar="SECONDS",
    )
    progress: bool | None = option(
        None, "show a progress bar on rank 0 (None: only on a terminal)", command_line=False
    )
    record: bool = option(
        True, "False: write no store and no checkpoints (benchmarks, dry runs)", command_line=False
    )

    @property
    def run_dir(self) -> Path:
        """``checkpoints_dir/name``: checkpoints, ``loss_log.txt`` and the store."""
        return Path(self.checkpoints_dir) / self.name

    @property
    def store_dir(self) -> Path:
        """The run's snapshot store."""
        return self.run_dir / "pickle"

    @classmethod
    def from_options(cls, options: Mapping[str, Any], base: RunConfig | None = None) -> RunConfig:
        """A config from keyword options (aliases accepted); unknown names raise TypeError."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        known = set(fields)
        values: dict[str, Any] = {}
        for key, value in options.items():
            name = ALIASES.get(key, key)
            if name not in known:
                raise TypeError(
                    f"unknown run option {key!r}; the options are: {', '.join(sorted(known))}"
                )
            if name in values:
                raise TypeError(f"run option {name!r} given twice (as {key!r} too)")
            listed = fields[name].metadata.get("append") and value is not None
            values[name] = tuple(value) if listed else value
        return dataclasses.replace(base or cls(), **values)

    def to_options(self) -> dict[str, Any]:
        """The options as a plain dict (stored in the run's metadata and checkpoints)."""
        return dataclasses.asdict(self)
