"""Files that appear whole or not at all, and the temporary files a killed write leaves.

The one implementation of an atomic write in the project: the store's documents
(meta, status), the trainer's checkpoints and the local transfer plugin's copies
all go through :func:`atomic_file`, so the leftovers of any of them are named
alike and :func:`remove_leftover_tmp_files` knows them.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

# Temporary files of atomic writes: ``.<target>.<pid>@<host>.<8 random chars>.tmp``.
# The writer's pid and host tell a leftover of a killed write from one in progress.
_TMP_SUFFIX = ".tmp"
_TMP_RE = re.compile(r"^\.(.+)\.(\d+)@([A-Za-z0-9_-]*)\.[a-z0-9_]{8}\.tmp$")
_OLD_TMP_RE = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")  # before pid and host were named
# A temporary file of another host is taken as abandoned after this long unchanged.
_FOREIGN_TMP_SECONDS = 3600.0


def _host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:32]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def _abandoned_tmp(name: str, st: os.stat_result) -> bool:
    """Whether ``name`` is the temporary file of an atomic write that will never finish."""
    match = _TMP_RE.match(name)
    if match is None:
        return _OLD_TMP_RE.match(name) is not None
    pid, host = int(match.group(2)), match.group(3)
    if host != _host_tag():
        return time.time() - st.st_mtime > _FOREIGN_TMP_SECONDS
    # Our own pid: a restarted container often gets its old pid back, and this
    # process is only opening the run, so the file is an earlier process's.
    return pid == os.getpid() or not _pid_alive(pid)


def remove_leftover_tmp_files(store_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove temporary files of killed atomic writes from a store and its run dir.

    Called when a writer opens a run: those files (``.meta.pickle.*.tmp``,
    ``.latest.pth.*.tmp`` of checkpoints) would otherwise stay forever. A file
    whose writer still runs on this host is kept. Returns the paths removed.
    """
    store = Path(store_dir)
    dirs = [store, store.parent] if store.name == "pickle" else [store]
    removed = []
    for directory in dirs:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if not (entry.name.startswith(".") and entry.name.endswith(_TMP_SUFFIX)):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and _abandoned_tmp(entry.name, st):
                    Path(entry.path).unlink()
                    removed.append(Path(entry.path))
            except OSError as err:
                log.warning("could not remove leftover temporary file %s: %s", entry.path, err)
    for path in removed:
        log.info("removed %s, left by an interrupted write", path)
    return removed


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Write a file that appears whole or not at all: temp file in the same dir, fsync, rename.

    A write killed midway leaves its temporary file, which
    :func:`remove_leftover_tmp_files` removes at the next start.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}@{_host_tag()}.", suffix=_TMP_SUFFIX, dir=path.parent
    )
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide it from a viewer running as another user
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_file(path) as f:
        f.write(data)


def ensure_writable_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` (with parents) and prove a file can be created in it; OSError if not.

    Creating a file is the only reliable test: permissions, read-only mounts and
    ACLs all show here, where ``os.access`` would miss some.
    """
    directory = Path(path)
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".write-test-{os.getpid()}"
    probe.write_bytes(b"")
    probe.unlink()
