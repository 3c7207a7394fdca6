"""Many local runs' documents read in worker processes, for ``Api().runs()``'s first listing.

Reading a run is Python (unpickling its status with the store's guards, then the cache's
JSON text of it, :func:`~.summary_cache.encoded`): some 100 us a run on one core, 10 s for
100,000. Past :data:`MIN_RUNS` runs not in the cache, workers (one a core, up to
:data:`MAX_WORKERS`) read them: new interpreters (``python -c``, not :mod:`multiprocessing`,
which would import the caller's ``__main__`` again in each), each given its share of the
stores' paths on stdin, one JSON string a line, and writing for each a line back::

    "<name its meta gives>" or null<TAB>[<status>, <meta or null>]

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
from pathlib import Path

from snapshot_store.read.local_source import LocalSource

log = logging.getLogger(__name__)

MIN_RUNS = 8000  # fewer are read here: a worker takes about 0.5 s to start, as many runs
MAX_WORKERS = 4  # past this, handing the lines over costs this process more than it gains
_WORKER = "from visualizer.api.read_pool import serve_reads; serve_reads()"
Pooled = tuple[str | None, str]  # a run's name (its meta's) and its documents' text


def cores() -> int:
    """The cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def read_pooled(paths: list[str]) -> Iterator[Pooled | None]:
    """Each store's (name, text) at ``paths`` (local store directories), in order, read by
    workers; None for one this process reads itself. Nothing is read by workers (all None)
    for fewer than :data:`MIN_RUNS` paths or one core."""
    count = min(cores(), MAX_WORKERS)
    workers = _started(paths, count) if len(paths) >= MIN_RUNS and count > 1 else []
    if not workers:
        yield from (None for _ in paths)
        return
    try:
        for index in range(len(paths)):  # run i is worker i % count's: all advance together
            yield _answer(workers[index % len(workers)])
    finally:
        for worker in workers:
            _ended(worker)


def _started(paths: list[str], count: int) -> list[subprocess.Popen[str]]:
    """``count`` workers, each given its share of ``paths`` (every ``count``-th), or none."""
    here = str(Path.cwd())  # the '' of sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or here for p in sys.path)}
    workers: list[subprocess.Popen[str]] = []
    try:
        for first in range(count):
            worker = subprocess.Popen(
                [sys.executable, "-c", _WORKER],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=env, text=True, encoding="utf-8",
            )  # fmt: skip
            workers.append(worker)
            assert worker.stdin is not None
            # Each reads all its paths before it writes: the whole share goes in at once.
            worker.stdin.write("".join(f"{json.dumps(p)}\n" for p in paths[first::count]))
            worker.stdin.close()
    except (OSError, ValueError) as err:  # no interpreter to start, a worker gone at once
        log.info("runs read here, not in workers (%s)", err)
        for worker in workers:
            _ended(worker)
        return []
    return workers


def _answer(worker: subprocess.Popen[str]) -> Pooled | None:
    """The next run ``worker`` read; None where it left it to this process (or ended)."""
    assert worker.stdout is not None
    line = worker.stdout.readline()
    head, tab, text = line.rstrip("\n").partition("\t")
    if not tab or text[:2] != "[{" or text[-1:] != "]":
        return None
    name = json.loads(head)
    return (name if isinstance(name, str) else None), text


def _ended(worker: subprocess.Popen[str]) -> None:
    """Close ``worker``'s pipe and wait for it (killed when it is not done: the listing is)."""
    if worker.poll() is None:
        worker.kill()
    worker.wait()
    if worker.stdout is not None:
        worker.stdout.close()
    if worker.returncode not in (0, -9):
        log.info("a worker reading runs ended with %s: its runs were read here", worker.returncode)


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
            out.write(f"{json.dumps(name_in(read.meta))}\t{text}\n")
    out.flush()


class _Warned(logging.Handler):
    """Counts the warnings and errors logged (a worker tells none itself)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
