"""The trainer's checkpoints as W&B-style artifacts of their run, and the one a resumed run used.

Each checkpoint the loop saves (``latest.pth``, ``epoch_N.pth``, ``best.pth``) is recorded
in the run's store as an ``artifact`` record of type ``model`` named ``<run name>-checkpoint``
(one name a run, as W&B's ``log_model`` gives one artifact a run, with versions), its one
file ``model.pth`` referenced where it lies (no copy), aliased as the file is named
(``latest``, ``best``, ``epoch_N``), its metadata the step, the epoch and the monitored
validation score it was saved at. A run resumed with ``--continue-train`` records an
``artifact_use`` of the checkpoint it loaded. The record's shape and digests are
:mod:`snapshot_store.format.artifacts`'.

The digest (an MD5 of the whole file) is computed on a thread of its own: the training
thread only opens the file (microseconds), so an atomic replace of ``latest.pth`` by the
next save does not change the bytes hashed, and a multi-GB checkpoint costs the loop nothing
but that thread's CPU. :meth:`CheckpointArtifacts.close` waits for the records still
hashing before the store closes. Rank 0 only: elsewhere the session has no recorder.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import IO, Any

from snapshot_store import Recorder
from snapshot_store.format import artifacts

log = logging.getLogger(__name__)

# The file's name inside every checkpoint artifact: equal contents saved as latest.pth and
# best.pth at one step are one version with both aliases, as W&B makes them.
MODEL_FILE = "model.pth"


def checkpoint_name(run_name: str) -> str:
    """The artifact name of a run's checkpoints: ``<run name>-checkpoint``."""
    return f"{run_name}-checkpoint"


def aliases_of(filename: str) -> list[str]:
    """The alias a checkpoint file gives its version: ``best.pth`` -> ``best``."""
    return [Path(filename).stem]


def last_score(history: Mapping[str, list[tuple[int, float, float]]], monitor: str) -> Any:
    """The monitored validation score last recorded (``val/loss``, ``metric/acc``), or None."""
    for key in (f"val/{monitor}", f"metric/{monitor}"):
        if history.get(key):
            return history[key][-1][2]
    return None


class CheckpointArtifacts:
    """Records a run's checkpoints (and the one it resumed from) in its store, hashing off
    the training thread.

    Args:
        recorder: the run's store (None: not the writing rank, nothing is recorded).
        run_dir: the run's directory, what ``stored`` paths are relative to.
        run_name: the run's name (``--name``), the artifact's ``<name>-checkpoint``.
    """

    def __init__(self, recorder: Recorder | None, run_dir: Path, run_name: str) -> None:
        self._recorder, self._run_dir = recorder, Path(run_dir)
        self.name = checkpoint_name(run_name)
        self._pool: ThreadPoolExecutor | None = None
        self._files: set[str] = set()  # the checkpoint files saved: the runs table's count

    def saved(self, path: Path, step: int, metadata: Mapping[str, Any]) -> None:
        """Record the checkpoint just written at ``path`` at ``step``, its ``metadata`` plain."""
        meta = {"step": step, **metadata, "original_filename": path.name}
        self._hashed(path, partial(self._log_artifact, path, step, meta))
        if self._recorder is not None:
            self._files.add(path.name)
            self._recorder.set_status(checkpoints={"count": len(self._files), "step": step})

    def resumed_from(self, path: Path, step: int) -> None:
        """Record that this run loaded the checkpoint at ``path`` (its own ``latest.pth``)."""
        self._files.update(p.name for p in self._run_dir.glob("*.pth"))  # saved before
        self._hashed(path, partial(self._log_use, path, step))

    def close(self) -> None:
        """Wait for the records still hashing (before the store closes)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _hashed(self, path: Path, then: Callable[[str, int, float], None]) -> None:
        """Open ``path`` now (its bytes as saved), hash it on this object's thread, then ``then``."""
        if self._recorder is None:
            return
        try:
            handle = path.open("rb")
        except OSError as err:  # gone already: the record is a convenience, training goes on
            log.warning("checkpoint %s not recorded as an artifact: %s", path, err)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="checkpoint-digest")
        self._pool.submit(_hash_then, handle, time.time(), then)

    def _entry(self, path: Path, digest: str, size: int) -> dict[str, Any]:
        stored = path.relative_to(self._run_dir).as_posix()
        return {"path": MODEL_FILE, "digest": digest, "size": size, "stored": stored}

    def _log_artifact(
        self, path: Path, step: int, meta: dict[str, Any], digest: str, size: int, wall: float
    ) -> None:
        assert self._recorder is not None  # only hashed with a recorder
        record = artifacts.artifact_record(
            self.name,
            "model",
            [self._entry(path, digest, size)],
            metadata=meta,
            aliases=aliases_of(path.name),
            description=f"the trainer's checkpoint {path.name} at step {step}",
        )
        self._recorder.log_record("artifact", self.name, record, step, wall_time=wall)

    def _log_use(self, path: Path, step: int, digest: str, size: int, wall: float) -> None:
        assert self._recorder is not None
        entry = self._entry(path, digest, size)
        record = {
            "name": self.name,
            "version": "",  # the reader finds it by the digest among the run's versions
            "digest": artifacts.manifest_digest([entry]),
            "run": self._run_dir.name,
            "stored": [entry["stored"]],
        }
        self._recorder.log_record("artifact_use", self.name, record, step, wall_time=wall)


def _hash_then(handle: IO[bytes], wall: float, then: Callable[[str, int, float], None]) -> None:
    """The digest and size of ``handle``'s bytes (closed after), given to ``then``."""
    try:
        with handle:
            digest, size = artifacts.file_digest(handle)
        then(digest, size, wall)
    except Exception as err:  # a record lost is said, never ends the run
        log.warning("checkpoint %s not recorded as an artifact: %s", handle.name, err)
