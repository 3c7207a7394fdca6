"""A Lightning logger writing the snapshot store: ``Trainer(logger=MonitorLogger("checkpoints"))``.

The store is ``<save_dir>/<name>/<version>/pickle``, the run named ``<name>/<version>``
(TensorBoard's name for it: its path under ``save_dir``), beside Lightning's
``checkpoints/`` directory, so one transfer hook (``remote_transfer_cmd``) sends
both with the same relative layout. Only global rank zero writes: every writing
method is ``rank_zero_only``, as in Lightning's own loggers, and the writer is
opened on first use there. Every metric is stored under the name logged, with
the steps TensorBoardLogger gives it (Lightning's ``epoch`` entry too, which
also becomes the points' epoch).
"""

from __future__ import annotations

import logging
import math
import signal
import sys
from argparse import Namespace
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning
from lightning.fabric.utilities.logger import _convert_params, _flatten_dict, _sanitize_params
from lightning.pytorch.callbacks import Checkpoint
from lightning.pytorch.core.saving import save_hparams_to_yaml
from lightning.pytorch.loggers import Logger
from lightning.pytorch.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers.utilities import _scan_checkpoints
from lightning.pytorch.utilities.exceptions import SIGTERMException
from lightning.pytorch.utilities.rank_zero import rank_zero_only

from run_core.endings import ended_state
from run_core.exit_codes import ExitCode
from snapshot_store.format.kinds import OWN_RUN_TAG
from trainer import SummaryWriter
from trainer.ranks import distributed

from ._run import MonitorRun, check_adapter

log = logging.getLogger(__name__)

LIGHTNING_VERSIONS = ">=2.1,<3"
HPARAMS_FILE = "hparams.yaml"  # TensorBoardLogger's NAME_HPARAMS_FILE, in log_dir


class MonitorLogger(Logger):
    """Lightning logger over the snapshot store (global rank zero writes, others do nothing).

    Args:
        save_dir: root of the runs, like the trainer's ``--checkpoints-dir``.
        name: the experiment's directory under ``save_dir``.
        version: ``int`` (a ``version_<n>`` directory) or ``str`` (used as is); by default
            the next free ``version_<n>``, as TensorBoardLogger does.
        remote_transfer_cmd: ``module.func`` transfer hook (the trainer's
            ``--remote-transfer-cmd``): store files and saved checkpoints are handed to it.
        default_hp_metric: log ``hp_metric`` = -1 at step 0 when hyperparameters come
            without metrics, as TensorBoardLogger does (its hparams tab needs a metric).
    """

    def __init__(
        self,
        save_dir: str | Path = "checkpoints",
        name: str = "lightning_logs",
        version: int | str | None = None,
        remote_transfer_cmd: str | None = None,
        default_hp_metric: bool = True,
    ) -> None:
        check_adapter(
            self, "lightning", lightning.__version__, LIGHTNING_VERSIONS, remote_transfer_cmd
        )
        super().__init__()
        self._save_dir = Path(save_dir)
        self._name = name
        self._version = version
        self._transfer_spec = remote_transfer_cmd
        self._default_hp_metric = default_hp_metric
        self._hparams: dict[str, Any] = {}
        self._run: MonitorRun | None = None
        self._sent: dict[str, float] = {}  # checkpoint path -> mtime handed to the hook

    @property
    def name(self) -> str:
        """The experiment's directory under ``save_dir``."""
        return self._name

    @property
    def version(self) -> int | str:
        """This run's version (the next free ``version_<n>`` unless given)."""
        if self._version is None:
            self._version = _next_version(self._save_dir / self._name)
        return self._version

    @property
    def save_dir(self) -> str:
        """Root of the runs; Lightning puts checkpoints under ``save_dir/name/version``."""
        return str(self._save_dir)

    @property
    def root_dir(self) -> str:
        """``save_dir/name``: where the versions of this experiment live."""
        return str(self._save_dir / self._name)

    @property
    def log_dir(self) -> str:
        """This run's directory; the store is its ``pickle`` subdirectory."""
        return str(self._save_dir / self._run_name())

    def _run_name(self) -> str:
        """``<name>/<version>``: the run's name in the store's metadata, so the viewer names it
        as TensorBoard does (its path under ``save_dir``), not ``version_0`` alone."""
        version = self.version if isinstance(self.version, str) else f"version_{self.version}"
        return (Path(self._name) / version).as_posix()

    @property
    @rank_zero_experiment
    def experiment(self) -> SummaryWriter:
        """Our :class:`trainer.SummaryWriter` over this run's store (a no-op object off rank zero)."""
        return self._open().writer

    @rank_zero_only
    def log_hyperparams(
        self,
        params: Mapping[str, Any] | Namespace,
        metrics: Mapping[str, float] | float | None = None,
        step: int | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        """Make ``params`` (merged with earlier ones) the run's options in the store's metadata
        and ``hparams.yaml``; with ``metrics`` (a number is ``hp_metric``; none, ``hp_metric``
        = -1 unless ``default_hp_metric`` is off), log them at ``step`` (TensorBoard's 0 for
        None) and store TensorBoard's hparams records as TensorBoardLogger writes them: a
        session of ``params`` flattened (``model/depth``) and sanitized as Lightning does,
        numbers as TensorBoard's floats, and the metrics' tags (their values: the scalars)."""
        params = _convert_params(params if isinstance(params, Namespace) else dict(params))
        self._hparams.update(params)
        if self._run is not None:
            self._run.set_options(self._hparams)
        if metrics is None and self._default_hp_metric:
            metrics = {"hp_metric": -1}
        elif metrics is not None and not isinstance(metrics, Mapping):
            metrics = {"hp_metric": metrics}
        if metrics:
            self.log_metrics(metrics, step)
            session = {
                k: _tensorboard_value(v) for k, v in _sanitize_params(_flatten_dict(params)).items()
            }
            tags = dict.fromkeys(map(str, metrics), math.nan)  # each value: its scalar's
            self._open().writer.add_hparams_row(session, tags, OWN_RUN_TAG, step or 0)

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """Record ``metrics`` at ``step``; an ``epoch`` entry also sets their epoch."""
        self._open().log(metrics, step, epoch=metrics.get("epoch"))

    @rank_zero_only
    def after_save_checkpoint(self, checkpoint_callback: Checkpoint) -> None:
        """Hand checkpoints saved since the last call to the transfer hook (rank zero)."""
        if self._transfer_spec is None:
            return
        new = _scan_checkpoints(checkpoint_callback, self._sent)
        self._sent.update((path, mtime) for mtime, path, _score, _tag in new)
        self._open().send([Path(path) for _mtime, path, _score, _tag in new])

    @rank_zero_only
    def save(self) -> None:
        """Write ``hparams.yaml`` (the hyperparameters, nested) in :attr:`log_dir` once, as
        TensorBoardLogger does, when that directory exists."""
        hparams_file = Path(self.log_dir) / HPARAMS_FILE
        if hparams_file.parent.is_dir() and not hparams_file.is_file():
            save_hparams_to_yaml(hparams_file, self._hparams)

    @rank_zero_only
    def finalize(self, status: str) -> None:
        """Close the store as the run ended (:func:`ended_state`), after ``hparams.yaml`` when
        it succeeded (TensorBoardLogger's); logging again later reopens it."""
        if status == "success":
            self.save()
        if self._run is not None:
            run, self._run = self._run, None
            run.close(_state_for(status))

    def _open(self) -> MonitorRun:
        if self._run is None:
            log_dir = Path(self.log_dir)
            self._run = MonitorRun(
                log_dir / "pickle",
                self._save_dir,
                options=self._hparams,
                transfer_spec=self._transfer_spec,
                world_size=distributed.group_size(),
                name=self._run_name(),
            )
        return self._run

    def __getstate__(self) -> dict[str, Any]:
        # Spawned workers get a copy without the open writer (threads do not pickle).
        state = self.__dict__.copy()
        state["_run"] = None
        return state


def _tensorboard_value(value: Any) -> Any:
    """A sanitized hyperparameter as TensorBoard's hparams session holds it: text as text,
    a number, bool or tensor (its first value) as a float."""
    if isinstance(value, str):
        return value
    if hasattr(value, "reshape"):  # a tensor: torch's hparams() takes its first value
        value = value.reshape(-1)[0].item()
    return float(value)


def _state_for(status: str) -> str:
    """The store's state for Lightning's ``finalize`` status: Lightning says ``failed`` for
    every exception, Ctrl-C included, so the exception it is handling then tells which."""
    if status != "failed":
        return ended_state(None)
    error = sys.exc_info()[1]
    if isinstance(error, SIGTERMException):  # its SIGTERM handler's: a SystemExit without a code
        return ended_state(signal.SIGTERM)
    return ended_state(ExitCode.FAILED if error is None else error)


def _next_version(root: Path) -> int:
    """One past the highest ``version_<n>`` directory under ``root`` (0 when none)."""
    found = [int(p.name[8:]) for p in root.glob("version_*") if p.is_dir() and p.name[8:].isdigit()]
    return max(found, default=-1) + 1
