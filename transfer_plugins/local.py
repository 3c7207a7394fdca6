"""Copy store files and checkpoints into a directory that both sides mount.

Use with ``--remote-transfer-cmd transfer_plugins.local.copy_to`` and
``TRANSFER_LOCAL_DIR=<dir>`` (an NFS/SSHFS/shared-volume path); a file lands at
``<dir>/<relative_path>``, e.g. ``<dir>/myrun/pickle/scalars-00000000.pickle``.

Each copy is written to a hidden temp file in the target directory, fsynced and
renamed over the target, so a follower of ``<dir>`` sees either the previous or
the new complete file, never half of one. The temp name (``.<name>.*.tmp``)
matches no store file name, so followers ignore it.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from run_core.atomic import atomic_file
from transfer_plugins.common import SentRecord, checked_relative

log = logging.getLogger(__name__)

DIR_ENV = "TRANSFER_LOCAL_DIR"
_COPY_CHUNK = 1024 * 1024


class LocalTransferError(RuntimeError):
    """Local transfer misconfigured or unusable; the message says what to fix."""


def target_dir() -> Path:
    """The directory named by ``TRANSFER_LOCAL_DIR``; LocalTransferError if unset."""
    value = os.environ.get(DIR_ENV, "").strip()
    if not value:
        raise LocalTransferError(f"{DIR_ENV} is not set: set it to a directory both sides mount")
    return Path(value).expanduser()


def copy_atomic(source: Path, target: Path) -> None:
    """Replace ``target`` with a copy of ``source``, whole or not at all (the store's atomic
    write: a follower of the copy reads it as it reads the store)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(target) as out, source.open("rb") as src:
        shutil.copyfileobj(src, out, _COPY_CHUNK)


_record = SentRecord()


def copy_to(source_path: str | os.PathLike[str], relative_path: str) -> bool:
    """Copy ``source_path`` to ``$TRANSFER_LOCAL_DIR/<relative_path>`` unless unchanged.

    Returns whether the file was copied. Errors propagate for the runner to retry.
    """
    source = Path(source_path)
    target = target_dir() / checked_relative(relative_path)
    copied = _record.send_if_changed(str(target), source, lambda: copy_atomic(source, target))
    log.debug("%s %s", "copied to" if copied else "unchanged, skipped", target)
    return copied


def check_target_dir() -> None:
    """Check once at start-up that ``TRANSFER_LOCAL_DIR`` is an existing dir that takes copies.

    The check is a real copy of an empty probe through :func:`copy_atomic`, removed
    after: permissions, read-only mounts and ACLs all show, where ``os.access``
    would miss some.
    """
    directory = target_dir()
    if not directory.is_dir():
        raise LocalTransferError(
            f"{DIR_ENV}={str(directory)!r} is not an existing directory: "
            "create or mount it on this machine first"
        )
    # Hidden, so a follower of the directory never takes it for a store file.
    probe = directory / f".preflight-{os.getpid()}"
    try:
        copy_atomic(Path(os.devnull), probe)  # an empty file, through the real copy code
    except OSError as err:
        raise LocalTransferError(
            f"{DIR_ENV}={str(directory)!r} is not writable ({err.strerror or err}): "
            "fix its permissions or mount it read-write"
        ) from err
    probe.unlink()
    log.info("local transfer ready: copying into %s", directory)


copy_to.preflight = check_target_dir  # type: ignore[attr-defined]
