"""Checkpoint files: written atomically, loadable with ``torch.load(..., weights_only=True)``.

``weights_only`` refuses anything but tensors and plain containers/scalars, so
RNG states (a numpy array, Python's tuple of ints) are stored as tensors and
options as plain values (:func:`run_core.values.plain`).
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import torch

from run_core.atomic import atomic_file
from run_core.values import amount
from trainer.training.disk_full import DiskFullError, out_of_space

# The run dir's checkpoints: the newest state (resumed from) and the best validation score's.
LATEST, BEST = "latest.pth", "best.pth"


def rng_state() -> dict[str, Any]:
    """This process's torch, CUDA, numpy and Python RNG states, as tensors."""
    version, mt_state, gauss = random.getstate()
    _, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state(legacy=True)
    state = {
        "torch": torch.get_rng_state(),
        "python": torch.tensor(mt_state, dtype=torch.int64),
        "python_version": version,
        "python_gauss": gauss,
        "numpy": torch.from_numpy(np.asarray(np_keys, dtype=np.int64)),
        "numpy_pos": int(np_pos),
        "numpy_gauss": [int(np_has_gauss), float(np_gauss)],
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what :func:`rng_state` captured."""
    torch.set_rng_state(state["torch"].cpu())
    random.setstate(
        (state["python_version"], tuple(state["python"].tolist()), state["python_gauss"])
    )
    has_gauss, gauss = state["numpy_gauss"]
    np.random.set_state(
        (
            "MT19937",
            state["numpy"].numpy().astype(np.uint32),
            state["numpy_pos"],
            int(has_gauss),
            float(gauss),
        )
    )
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def parts_state(parts: Mapping[str, Any]) -> dict[str, Any]:
    """``state_dict()`` of each part (model, optimizer, ...), None for an absent one."""
    return {name: part.state_dict() if part is not None else None for name, part in parts.items()}


def load_parts(saved: Mapping[str, Any], parts: Mapping[str, Any]) -> None:
    """Load what :func:`parts_state` saved into each part that is present on both sides."""
    for name, part in parts.items():
        if part is not None and saved.get(name) is not None:
            part.load_state_dict(saved[name])


def save_whole(obj: Any, path: Path) -> None:
    """``torch.save`` ``obj`` to ``path`` so that the file appears whole or not at all.

    A full disk raises :class:`DiskFullError` naming the space the checkpoint needs;
    an interrupt mid-write raises the interrupt. Either way the temporary file is gone
    and a previous ``path`` is kept as it was.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as f:
            torch.save(obj, f)
    except (OSError, RuntimeError) as err:
        if isinstance(err.__context__, (KeyboardInterrupt, SystemExit)):
            # Ctrl-C or SIGTERM mid-write: torch's zip writer, closing on the way out, raises
            # its own error in the interrupt's place; the run must still end as interrupted.
            raise err.__context__ from None
        if not out_of_space(err):
            raise
        raise DiskFullError(
            f"no space left for checkpoint {path}: it needs {amount(_size_of(obj))}, "
            f"{amount(shutil.disk_usage(path.parent).free)} free there"
        ) from None


class _ByteCounter:
    """A file-like sink that only counts what ``torch.save`` writes to it."""

    size = 0

    def write(self, data: Any) -> int:
        n = memoryview(data).nbytes
        self.size += n
        return n

    def flush(self) -> None:
        """Nothing is buffered."""


def _size_of(obj: Any) -> int:
    """The bytes ``torch.save(obj)`` writes (serialised again, on the failure path only)."""
    counter = _ByteCounter()
    torch.save(obj, cast(IO[bytes], counter))  # torch calls only write() and flush()
    return counter.size


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a checkpoint safely (tensors on the CPU; ``load_state_dict`` moves them)."""
    return torch.load(Path(path), map_location="cpu", weights_only=True)
