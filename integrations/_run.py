"""What the framework adapters share: one run's writer, kept names, version checks.

A :class:`MonitorRun` is opened only on the process the framework names as
global rank zero, so it passes ``rank=0`` to the recorder instead of asking the
environment again.

Every metric is stored under the name the framework logged, as TensorBoard's
logger for that framework would tag it: nothing is renamed and two names never
merge (:func:`run_core.tags.key_of`); which window shows it is the
viewer's display rule (:func:`visualizer.layout.window_for`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from run_core.tags import key_of
from trainer import SummaryWriter
from transfer_plugins.runner import resolve_hook

log = logging.getLogger(__name__)


class UnsupportedVersionError(ImportError):
    """The installed framework is outside the range an adapter was written and tested for."""


def require_version(adapter: str, package: str, installed: str, supported: str) -> None:
    """Raise :class:`UnsupportedVersionError` unless ``installed`` is in ``supported``."""
    # Here, not at the top: the W&B-style module imports this one on laptops without the
    # frameworks' extras, which bring ``packaging``.
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

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
    from trainer.ranks.distributed import settle_collectives_at_exit  # torch: the adapters'

    require_version(type(adapter).__name__, package, installed, supported)
    settle_collectives_at_exit()  # the framework may run DDP in this process
    if transfer_spec:
        resolve_hook(transfer_spec)


class MonitorRun:
    """The one writer of a run: our SummaryWriter over ``store_dir``, and the transfer hook.

    The writer opens its run as every writer does, through a
    :class:`~trainer.training.writing_run.WritingRun`: ``store_dir`` is held for one writer
    from here to :meth:`close`, so a second process given the same directory is refused,
    naming the first.

    Args:
        store_dir: the snapshot store, conventionally ``<root>/<run>/pickle``.
        root: what transferred paths are relative to (the trainer's checkpoints dir).
        options: the run's options or hyperparameters, saved in the store's metadata.
        transfer_spec: a ``module.func`` hook every store file and checkpoint is handed to.
        world_size: processes in the job, recorded in the metadata.
        writer_kwargs: more arguments of our :class:`~trainer.SummaryWriter`
            (TensorBoard's ``flush_secs``...), as a TensorBoard logger passes them on.
    """

    def __init__(
        self,
        store_dir: Path,
        root: Path,
        options: Mapping[str, Any] | None = None,
        transfer_spec: str | None = None,
        world_size: int = 1,
        **writer_kwargs: Any,
    ) -> None:
        self.writer = SummaryWriter(
            store_dir,
            remote_transfer_cmd=transfer_spec,
            transfer_root=root,
            options=dict(options or {}),
            world_size=world_size,
            rank=0,  # opened only where the framework says global rank zero
            instead="log this run to another directory",
            **writer_kwargs,
        )
        self._run = self.writer.writing_run
        self.transfer = self._run.transfer
        self.recorder = self.writer.recorder
        self._keys: dict[str, tuple[str, str]] = {}  # logged name -> store key, split once
        self._warned: set[str] = set()

    def log(self, metrics: Mapping[str, Any], step: int | None, epoch: float | None = None) -> None:
        """Record ``metrics`` at ``step`` as TensorBoard's loggers do: each number under its own
        name (step None is TensorBoard's 0), a ``str`` as text, a dict as ``add_scalars``."""
        step = 0 if step is None else int(step)
        groups: dict[str, dict[str, Any]] = {}
        for key, value in metrics.items():
            if isinstance(value, Mapping):  # TensorBoard's add_scalars: a window of its own
                self.recorder.log(value, step, epoch=epoch, group=key)
            elif isinstance(value, str):
                self.writer.add_text(key, value, step)
            elif isinstance(value, bool | int | float) or hasattr(value, "item"):
                where = self._keys.get(key)
                if where is None:
                    where = self._keys[key] = key_of(key)
                if type(value) is float and not math.isfinite(value):
                    self._warn(key, f"non-finite value {value} at step {step} (drawn as a gap)")
                groups.setdefault(where[0], {})[where[1]] = value
            else:
                self._warn(key, f"{type(value).__name__} is not a number, text or dict: not logged")
        for name, values in groups.items():
            self.recorder.log(values, step, epoch=epoch, group=name)

    def _warn(self, key: str, problem: str) -> None:
        """Warn once per name (a value logged every step would flood the log)."""
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s: %s", key, problem)

    def set_options(self, options: Mapping[str, Any] | None, name: str = "") -> None:
        """Make ``options`` the run's options (None: as they are) and, given one, ``name`` its
        shown name (W&B's ``run.name = ...``; the store's folder stays) in its metadata."""
        self.recorder.set_options(options, name)

    def send(self, paths: list[Path]) -> None:
        """Hand finished files (checkpoints) to the transfer hook, if one is set."""
        for path in paths:
            self._run.send(path)

    def close(self, state: str = "finished") -> None:
        """Close the store as ``state``, drain pending uploads as the trainer does
        (:func:`trainer.training.sync.send_remaining`: up to a minute, then what was not sent
        is named), and free the run for the next writer."""
        self._run.close(state)


def files_under(directory: Path) -> list[Path]:
    """Every regular file below ``directory``, sorted."""
    return sorted(p for p in Path(directory).rglob("*") if p.is_file())
