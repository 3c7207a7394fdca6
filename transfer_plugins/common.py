"""What the transfer plugins share: checking relative paths, and an in-process
record of what was last sent so unchanged files are skipped.

The store re-announces files often (a segment after every append, status on
every heartbeat); resending an identical file would waste the link that the
live view depends on.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import NamedTuple

# Files up to this size are also hashed: meta/status are tiny and may be rewritten
# within one mtime tick, where size and mtime alone would miss a change.
# Where the S3 hook copies files: s3://bucket/prefix (read by transfer_plugins.s3, and by
# the trainer to say where a run can be followed from).
S3_URI_ENV = "TRANSFER_S3_URI"
HASH_LIMIT = 1024 * 1024


def checked_relative(relative_path: str) -> PurePosixPath:
    """``relative_path`` as a POSIX path that stays under its root.

    Raises ValueError for an empty or absolute path or one with ``..``: a hook
    must never write outside the destination it was configured with.
    """
    path = PurePosixPath(relative_path)
    if not path.parts or path.is_absolute() or ".." in path.parts:
        raise ValueError(f"not a relative POSIX path under the checkpoints dir: {relative_path!r}")
    return path


class Signature(NamedTuple):
    """What identifies one version of a file; ``digest`` is empty for large files."""

    size: int
    mtime_ns: int
    inode: int
    digest: bytes


def signature(path: Path) -> Signature:
    """Signature of ``path`` as it is now."""
    st = Path(path).stat()
    digest = b""
    if st.st_size <= HASH_LIMIT:
        digest = hashlib.sha256(Path(path).read_bytes()).digest()
    # The inode changes on every atomic replace (meta, status), however fast.
    return Signature(st.st_size, st.st_mtime_ns, st.st_ino, digest)


class SentRecord:
    """Per destination key, the signature of the last successful send.

    Sends to one key are serialized: two workers announcing the same growing
    segment must not let an older upload finish last and overwrite a newer one.
    """

    def __init__(self) -> None:
        self._sent: dict[str, Signature] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def send_if_changed(self, key: str, path: Path, send: Callable[[], None]) -> bool:
        """Call ``send()`` unless ``path`` is unchanged since the last send to ``key``.

        Returns whether ``send`` ran. The signature is taken before sending, so a
        file that changes during the send differs next time and is sent again.
        """
        with self._lock_for(key):
            current = signature(path)
            if self._sent.get(key) == current:
                return False
            send()
            self._sent[key] = current
            return True

    def _lock_for(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())
