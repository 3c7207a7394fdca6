"""Many local runs' documents read in worker processes, for ``Api().runs()``'s first listing.

Reading a run is Python (unpickling its status with the store's guards, then the cache's
JSON text of it, :func:`~.summary_cache.encoded`): some 100 us a run on one core, 10 s for
100,000. Past :data:`MIN_RUNS` runs not in the cache, workers (one a core, up to
:data:`MAX_WORKERS`) read them: new interpreters (``python -c``, not :mod:`multiprocessing`,
which would import the caller's ``__main__`` again in each), each given its share of the
stores' paths on stdin, one JSON string a line, and writing for each a line back::

    [[<status size>, <status mtime>], "<name its meta gives>" or null]<TAB>[<status>, <meta or null>]

or an empty line for a run this process reads itself: one whose read warned or failed,
one whose documents the cache does not keep (:func:`~.summary_cache.encoded`), one with no
summary in its status (read whole). So every warning is told here, once, as before. This
process decodes nothing of what it keeps: the text goes to the cache as it came. A worker
that can not start, or ends early, leaves its runs to this process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from snapshot_store.read.local_source import LocalSource

log = logging.getLogger(__name__)

MIN_RUNS = 8000  # fewer are read here: a worker takes about 0.5 s to start, as many runs
MAX_WORKERS = 4  # past this, handing the lines over costs this process more than it gains
_WORKER = "from visualizer.api.read_pool import serve_reads; serve_reads()"
# A run's status version (read before its documents), its name (its meta's), its documents.
Pooled = tuple[object, str | None, str]


def cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


Workers = list[subprocess.Popen[str]]


@contextmanager
def workers_for(runs: int) -> Iterator[Workers]:
    """Workers for ``runs`` runs to read, started now (they take some 0.5 s to start, while
    this process finds which runs those are) and ended with the block; none for fewer than
    :data:`MIN_RUNS`, on one core, or where no interpreter starts."""
    workers = _started(runs)
    try:
        yield workers
    finally:
        _end(workers)


def _started(runs: int) -> Workers:
    count = min(cores(), MAX_WORKERS)
    if runs < MIN_RUNS or count < 2:
        return []
    here = str(Path.cwd())  # the '' of sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or here for p in sys.path)}
    workers: Workers = []
    command, pipe, none = [sys.executable, "-c", _WORKER], subprocess.PIPE, subprocess.DEVNULL
    try:
        for _ in range(count):
            worker = subprocess.Popen(
                command, stdin=pipe, stdout=pipe, stderr=none, env=env, encoding="utf-8"
            )
            workers.append(worker)
    except OSError as err:  # no interpreter to start
        log.info("runs read here, not in workers (%s)", err)
        _end(workers)
        return []
    return workers


def read_pooled(paths: list[str], workers: Workers) -> Iterator[Pooled | None]:
    """Each store's (version, name, text) at ``paths`` (local store directories), in order, read by
    ``workers`` (:func:`workers_for`); None for one this process reads itself (all of them
    without workers)."""
    given = _given(workers, paths)
    for index in range(len(paths)):  # run i is worker i % count's: all advance together
        yield _answer(workers[index % len(workers)]) if given else None


def _given(workers: Workers, paths: list[str]) -> bool:
    """Whether each of ``workers`` took its share of ``paths`` (every n-th, for n workers)."""
    try:
        for first, worker in enumerate(workers):
            assert worker.stdin is not None
            # Each reads all its paths before it writes: the whole share goes in at once.
            worker.stdin.write("".join(f"{json.dumps(p)}\n" for p in paths[first :: len(workers)]))
            worker.stdin.close()
    except (OSError, ValueError) as err:  # a worker gone at once
        log.info("runs read here, not in workers (%s)", err)
        return False
    return bool(workers)


def _answer(worker: subprocess.Popen[str]) -> Pooled | None:
    """The next run ``worker`` read; None where it left it to this process (or ended)."""
    assert worker.stdout is not None
    line = worker.stdout.readline()
    head, tab, text = line.rstrip("\n").partition("\t")
    if not tab or text[:2] != "[{" or text[-1:] != "]":
        return None
    try:
        version, name = json.loads(head)
    except (ValueError, TypeError):  # cut short: the worker ended
        return None
    version = version if type(version) is int else None  # as status_version gives it
    return version, (name if isinstance(name, str) else None), text


def _end(workers: Workers) -> None:
    """Close the workers' pipes and wait for them (killed when not done: the listing is)."""
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        for pipe in (worker.stdin, worker.stdout):
            if pipe is not None:
                pipe.close()
        if worker.returncode not in (0, -9):
            log.info("a worker reading runs ended with %s: runs read here", worker.returncode)


def serve_reads() -> None:
    """A worker: the stores named on stdin, each read and written out a line (see module)."""
    from visualizer.sources.runs import name_in
    from visualizer.sources.summary_read import read_summary

    from .summary_cache import encoded

    warned = _Warned()
    logging.getLogger().addHandler(warned)  # what warns is read again, and told, by the parent
    paths = [json.loads(line) for line in sys.stdin]
    out = sys.stdout
    for path in paths:
        warned.count = 0
        try:
            read = read_summary(LocalSource(path), whole=False)
            text = encoded(read)  # None where the status keeps no summary: read whole there
        except Exception:  # the parent reads it again, and says why
            text = None
        if text is None or warned.count:
            out.write("\n")
        else:
            out.write(f"{json.dumps([read.version, name_in(read.meta)])}\t{text}\n")
    out.flush()


class _Warned(logging.Handler):
    """Counts the warnings and errors logged (a worker tells none itself)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
