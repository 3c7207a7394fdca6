"""What rank 0 shows and keeps: console log lines, ``loss_log.txt`` and the progress bar."""

from __future__ import annotations

import logging
import os
import shlex
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from run_core.redaction import redact_text
from trainer.training.interrupts import signals_at_the_end
from transfer_plugins.common import S3_URI_ENV

_pkg_log = logging.getLogger("trainer")


class RedactSecrets(logging.Filter):
    """Log lines with :func:`~run_core.values.redact_text` applied (URL logins, tokens)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = redact_text(message)
        if safe != message:
            record.msg, record.args = safe, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


def configure_logging(master: bool) -> None:
    """Timestamped lines on the console (a CLI's choice); only errors from ranks other than 0."""
    logging.basicConfig(
        level=logging.INFO if master else logging.ERROR,
        format="%(asctime)s %(message)s",
        datefmt="%H:%M:%S",
        force=True,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactSecrets())
    # boto3 announces at INFO where it found credentials: noise in a training log.
    for noisy in ("boto3", "botocore", "s3transfer", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


class _LogFile(logging.FileHandler):
    """``loss_log.txt``: a line it can not write (a full disk) is said once, not a traceback each."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging names it
        self._say_once(sys.exc_info()[1])

    def close(self) -> None:
        try:
            super().close()  # flushes what is buffered: a full disk fails here too
        except OSError as err:
            self._say_once(err)

    def _say_once(self, err: BaseException | None) -> None:
        if not self.failed:
            self.failed = True
            print(
                f"can not write {self.baseFilename} ({err}); log lines go to the console only",
                file=sys.stderr,
            )


@contextmanager
def run_logging(master: bool, log_file: Path | None) -> Iterator[None]:
    """Rank 0 logs the run to the console and ``log_file``; other ranks only log errors."""
    previous_level = _pkg_log.level
    handlers: list[logging.Handler] = []
    if master:
        _pkg_log.setLevel(logging.INFO)
        if log_file is not None:
            to_file = _LogFile(log_file, encoding="utf-8")
            to_file.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%d %H:%M:%S"))
            handlers.append(to_file)
        if not logging.getLogger().handlers:  # a library call with no logging configured
            handlers.append(logging.StreamHandler())
    else:
        _pkg_log.setLevel(logging.ERROR)
    for handler in handlers:
        handler.addFilter(RedactSecrets())
        _pkg_log.addHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            _pkg_log.removeHandler(handler)
            handler.close()
        _pkg_log.setLevel(previous_level)


@contextmanager
def log_through_tqdm() -> Iterator[None]:
    """Send console log lines through ``tqdm.write`` so they do not tear the progress bar."""
    from tqdm.contrib.logging import _is_console_logging_handler, logging_redirect_tqdm

    _thread_lock_only()
    loggers = [
        lg
        for lg in (logging.getLogger(), _pkg_log)
        if any(_is_console_logging_handler(h) for h in lg.handlers)
    ]
    with (
        logging_redirect_tqdm(loggers, tqdm_class=_tqdm_writing_whole())
        if loggers
        else nullcontext()
    ):
        yield


def _tqdm_writing_whole() -> type:
    """tqdm whose ``write`` (each log line) is not cut by SIGTERM or Ctrl-C inside its lock."""
    from tqdm import tqdm

    class _WritingWhole(tqdm):
        @classmethod
        def write(cls, s: str, file: Any = None, end: str = "\n", nolock: bool = False) -> None:
            with signals_at_the_end():
                super().write(s, file=file, end=end, nolock=nolock)

    return _WritingWhole


def _thread_lock_only() -> None:
    """Give tqdm a thread lock before it makes its multiprocessing one.

    One process's bars need no lock across processes, and the semaphore tqdm would
    create in each spawned worker outlives it: "resource_tracker: There appear to
    be 2 leaked semaphore objects" at the end of ``fit(ddp=True)``.
    """
    from tqdm import tqdm

    if getattr(tqdm, "_lock", None) is None:
        tqdm.set_lock(threading.RLock())


def progress_bar(shown: bool | None, epoch: int, epochs: int, total: int, initial: int) -> Any:
    """A tqdm bar for one epoch; ``shown`` None lets tqdm decide (only on a terminal)."""
    from tqdm import tqdm

    _thread_lock_only()
    return tqdm(
        total=total,
        initial=initial,
        unit="step",
        leave=False,
        dynamic_ncols=True,
        desc=f"epoch {epoch + 1}/{epochs}",
        disable=None if shown is None else not shown,
    )


def watch_command(store_dir: Path, checkpoints_dir: Path, transfer_cmd: str | None) -> str:
    """The visualizer command that follows a run's store, for the start line.

    Where the S3 hook copies the store (``TRANSFER_S3_URI`` set), the bucket's
    address comes too: a laptop can follow the run from there.
    """
    command = "python run_visualizer_local.py --pickle-dir "
    local = command + shlex.quote(str(store_dir))
    uri = os.environ.get(S3_URI_ENV, "").strip().rstrip("/")
    if not (uri and transfer_cmd and transfer_cmd.endswith(".save_to_s3")):
        return local
    try:
        relative = Path(store_dir).resolve().relative_to(Path(checkpoints_dir).resolve())
    except ValueError:  # a store outside the checkpoints dir is not copied under the prefix
        return local
    remote = shlex.quote(f"{uri}/{relative.as_posix()}")  # S3 keys may hold spaces, '#', '?'
    return f"{local} (here), or from any machine: {command}{remote}"
