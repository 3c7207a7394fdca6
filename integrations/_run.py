"""What the framework adapters share: one run's writer, the metric-name mapping, version checks.

A :class:`MonitorRun` is opened only on the process the framework names as
global rank zero, so it passes ``rank=0`` to the recorder instead of asking the
environment again.

Metric names map to the store's groups (one viewer window each) by
:func:`split_name`:

==============================================  ==========================
name                                            group / series
==============================================  ==========================
``train_loss``, ``train/loss``                  ``train`` / ``loss``
``val_loss``, ``valid_acc``, ``eval_loss``      ``validation`` / ``loss``, ``acc``
``test_acc``                                    ``test`` / ``acc``
``lr``, ``lr-Adam``, ``learning_rate``          ``lr`` / the name as given
``other/name``                                  ``other`` / ``name``
anything else (``loss``, ``grad_norm``)         ``train`` / the name as given
==============================================  ==========================
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from trainer import SummaryWriter
from transfer_plugins.runner import TransferRunner, resolve_hook

log = logging.getLogger(__name__)

DEFAULT_GROUP = "train"
# Name prefixes (before the first "_" or "/") that name a group.
PREFIXES = {
    "train": "train",
    "training": "train",
    "val": "validation",
    "valid": "validation",
    "validation": "validation",
    "eval": "validation",
    "test": "test",
}
# Seconds close() waits for pending uploads before naming what was not sent.
TRANSFER_DRAIN_S = 60.0


class UnsupportedVersionError(ImportError):
    """The installed framework is outside the range an adapter was written and tested for."""


def require_version(adapter: str, package: str, installed: str, supported: str) -> None:
    """Raise :class:`UnsupportedVersionError` unless ``installed`` is in ``supported``."""
    if not SpecifierSet(supported).contains(Version(installed), prereleases=True):
        raise UnsupportedVersionError(
            f"{adapter} supports {package} {supported}; {package} {installed} is installed. "
            f"Install a supported version: pip install '{package}{supported}'"
        )


def check_adapter(
    adapter: object, package: str, installed: str, supported: str, transfer_spec: str | None
) -> None:
    """What every adapter checks at construction, on every process, before training starts:
    the framework's version, and that the transfer hook (if any) imports."""
    require_version(type(adapter).__name__, package, installed, supported)
    if transfer_spec:
        resolve_hook(transfer_spec)


def split_name(
    key: str, default: str = DEFAULT_GROUP, prefixes: Mapping[str, str] = PREFIXES
) -> tuple[str, str]:
    """``(group, series)`` of a framework's metric name (table in the module docstring)."""
    if key in ("lr", "learning_rate") or key.startswith(("lr-", "lr_", "lr/")):
        return "lr", key
    head, sep, rest = key.partition("/")
    if sep and rest:
        return prefixes.get(head.lower(), head), rest
    head, sep, rest = key.partition("_")
    if sep and rest and head.lower() in prefixes:
        return prefixes[head.lower()], rest
    return default, key


class MonitorRun:
    """The one writer of a run: our SummaryWriter over ``store_dir``, and the transfer hook.

    Args:
        store_dir: the snapshot store, conventionally ``<root>/<run>/pickle``.
        root: what transferred paths are relative to (the trainer's checkpoints dir).
        options: the run's options or hyperparameters, saved in the store's metadata.
        transfer_spec: a ``module.func`` hook every store file and checkpoint is handed to.
        world_size: processes in the job, recorded in the metadata.
        prefixes: name prefixes that choose a group (see :func:`split_name`).
    """

    def __init__(
        self,
        store_dir: Path,
        root: Path,
        options: Mapping[str, Any] | None = None,
        transfer_spec: str | None = None,
        world_size: int = 1,
        prefixes: Mapping[str, str] = PREFIXES,
    ) -> None:
        self.transfer = TransferRunner.from_spec(transfer_spec, root) if transfer_spec else None
        try:
            self.writer = SummaryWriter(
                store_dir,
                options=dict(options or {}),
                world_size=world_size,
                on_file=self.transfer.submit if self.transfer is not None else None,
                rank=0,  # opened only where the framework says global rank zero
            )
        except BaseException:  # an unwritable store: stop the runner's threads too
            if self.transfer is not None:
                self.transfer.close(0)
            raise
        self.recorder = self.writer.recorder
        self._prefixes = prefixes
        self._where: dict[str, tuple[str, str]] = {}  # metric name -> (group, series), cached
        self._non_finite: set[str] = set()
        self._last_step = -1

    def log(self, metrics: Mapping[str, Any], step: int | None, epoch: float | None = None) -> None:
        """Record ``metrics`` at ``step`` (the next step when None), grouped by name."""
        step = self._last_step + 1 if step is None else step
        self._last_step = step
        groups: dict[str, dict[str, Any]] = {}
        for key, value in metrics.items():
            if isinstance(value, Mapping):  # TensorBoard's add_scalars: a window of its own
                self.recorder.log(value, step, epoch=epoch, group=key)
                continue
            where = self._where.get(key)
            if where is None:
                where = self._where[key] = split_name(key, prefixes=self._prefixes)
            if type(value) is float and not math.isfinite(value) and key not in self._non_finite:
                self._non_finite.add(key)
                log.warning("%s: non-finite value %s at step %s (drawn as a gap)", key, value, step)
            group = groups.get(where[0])
            if group is None:
                group = groups[where[0]] = {}
            group[where[1]] = value
        for name, values in groups.items():
            self.recorder.log(values, step, epoch=epoch, group=name)

    def set_options(self, options: Mapping[str, Any]) -> None:
        """Make ``options`` the run's options in the store's metadata, after it opened."""
        self.recorder.set_options(options)

    def send(self, paths: list[Path]) -> None:
        """Hand finished files (checkpoints) to the transfer hook, if one is set."""
        if self.transfer is not None:
            for path in paths:
                self.transfer.submit(path, closed=True)

    def close(self, state: str = "finished") -> None:
        """Close the store as ``state`` and wait up to a minute for pending uploads."""
        try:
            self.recorder.close(state)
        finally:
            if self.transfer is not None:
                left = self.transfer.close(TRANSFER_DRAIN_S)
                if left:
                    log.warning(
                        "%d file(s) were not transferred by %s: %s",
                        len(left),
                        self.transfer.name,
                        ", ".join(map(str, left)),
                    )


def files_under(directory: Path) -> list[Path]:
    """Every regular file below ``directory``, sorted."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())
