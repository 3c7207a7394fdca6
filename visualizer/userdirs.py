"""Where the visualizer keeps per-user files: a cache it may lose, and state it must keep.

* cache: ``$XDG_CACHE_HOME/remote-train-monitor`` (default ``~/.cache/...``):
  visdom's JS/CSS tarballs and the static copy served from them; deleting it
  costs one download.
* state: ``$XDG_STATE_HOME/remote-train-monitor`` (default ``~/.local/state/...``;
  on Windows ``%LOCALAPPDATA%\\remote-train-monitor\\state``): which alerts were
  already sent, so a restarted visualizer does not send them again (deleting it
  re-sends the alerts of runs that are still there), and the baseline run chosen.
  A followed location's files are named by :func:`source_state_file`.

The same places for local stores and S3 ones: nothing is ever written into a
followed store or bucket. Files there are written with :func:`write_if_changed`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

CACHE_NAME = "remote-train-monitor"


def user_cache_dir() -> Path:
    """This project's cache directory: ``$XDG_CACHE_HOME/remote-train-monitor`` (``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / CACHE_NAME


def user_state_dir() -> Path:
    """This project's state directory (see the module's docstring for where)."""
    base = os.environ.get("XDG_STATE_HOME")
    if base:
        return Path(base) / CACHE_NAME
    local = os.environ.get("LOCALAPPDATA")
    if os.name == "nt" and local:
        return Path(local) / CACHE_NAME / "state"
    return Path.home() / ".local" / "state" / CACHE_NAME


def source_state_file(folder: str, source: str) -> Path:
    """The state file in ``folder`` of the runs at ``source`` (a directory or an s3:// URL)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    return user_state_dir() / folder / f"{digest}.json"


def write_if_changed(path: Path, data: bytes) -> bool:
    """Atomically write ``data`` to ``path`` unless it already holds exactly that."""
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        return False
    write_atomically(path, [data])
    return True


def write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to a temp file beside ``path``, then rename it to ``path``: a reader
    sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A temp name of its own: two visualizers may complete the same cache at once.
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.writelines(chunks)
        tmp.chmod(0o644)  # mkstemp's 0600 would hide a shared install's files from others
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
