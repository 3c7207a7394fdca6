"""Where ``python -m visualizer export`` writes: whole or not at all, and a failed write is
one line naming the cause (exit 1).

``--output FILE`` is written to a temporary file beside FILE and renamed over it once
complete, so a reader never sees half an export and an old FILE survives a failed one.
Standard output redirected to a file (``> runs.csv``) is cut back to where the export
began when a write fails: a truncated CSV looked complete. A full disk (ENOSPC), a
read-only target (EROFS, EACCES), a reader that went away (EPIPE) or an output that is
closed (``>&-``) each end the export with :class:`ExportWriteError`.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EPIPE: "the reader closed the pipe before the export ended",
}


class ExportWriteError(Exception):
    """The export could not be written whole: one line naming the target and the cause."""


def write_failure(target: str, err: OSError) -> ExportWriteError:
    """The one line for ``err`` met writing ``target``."""
    cause = _CAUSES.get(err.errno or 0, err.strerror or str(err))
    return ExportWriteError(f"can not write {target}: {cause}; nothing of the export was kept")


class _Written:
    """The stream an export writes to, whose failed write is an :class:`ExportWriteError`
    (an OSError of the export's reading stays what it is: a store not found, say)."""

    def __init__(self, out: IO[Any], target: str) -> None:
        self._out, self._target = out, target

    def write(self, data: Any) -> int:
        try:
            return self._out.write(data)
        except OSError as err:
            raise write_failure(self._target, err) from None

    def flush(self) -> None:
        try:
            self._out.flush()
        except OSError as err:
            raise write_failure(self._target, err) from None

    def __getattr__(self, name: str) -> Any:  # what pyarrow asks of a file (closed, tell)
        return getattr(self._out, name)


@contextmanager
def export_target(path: str | None, binary: bool) -> Iterator[IO[Any]]:
    """The stream to write the export to: ``path`` (atomically), or standard output."""
    if path is None:
        with _stdout(binary) as out:
            yield out
        return
    target = Path(path).absolute()
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise write_failure(path, err) from None
    part = Path(name)
    try:
        with os.fdopen(fd, "wb" if binary else "w", newline=None if binary else "") as out:
            yield _Written(out, path)  # type: ignore[misc]
            out.flush()
            os.fsync(out.fileno())
        part.chmod(0o666 & ~_umask())  # mkstemp's 0600 is not what > FILE would make
        part.replace(target)
    except OSError as err:
        part.unlink(missing_ok=True)
        raise write_failure(path, err) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise


@contextmanager
def _stdout(binary: bool) -> Iterator[IO[Any]]:
    """Standard output; cut back to where it began, if a file, when a write fails."""
    if sys.stdout is None:  # started with >&-: nowhere to write
        raise ExportWriteError(
            "can not write the export: standard output is closed; use --output FILE"
        )
    out: IO[Any] = sys.stdout.buffer if binary else sys.stdout
    start = _file_offset(out)
    written = _Written(out, "standard output")
    try:
        yield written  # type: ignore[misc]
        written.flush()
    except ExportWriteError:
        if start is not None:
            _cut(out, start)
        else:  # a closed pipe: the exit-time flush must not fail again
            _to_devnull(out)
        raise


def _file_offset(out: IO[Any]) -> int | None:
    """Where a regular file ``out`` is now; None for a pipe, a terminal or no file."""
    try:
        fd = out.fileno()
        return os.lseek(fd, 0, os.SEEK_CUR) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError, AttributeError):
        return None


def _cut(out: IO[Any], start: int) -> None:
    """Drop what the export wrote after ``start``, and what is still buffered."""
    try:
        os.ftruncate(out.fileno(), start)
    except OSError:
        return
    _to_devnull(out)  # the buffered rest goes nowhere at exit


def _to_devnull(out: IO[Any]) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, out.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
