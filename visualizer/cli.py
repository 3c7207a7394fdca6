"""``run-visualizer`` / ``python run_visualizer_local.py``: follow snapshot stores into visdom."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from urllib.parse import urlparse

from .display import DEFAULT_MAX_POINTS
from .follower import DEFAULT_MAX_IDLE_INTERVAL, DEFAULT_POLL_INTERVAL, Follower, NoRunsError
from .runs import LocalRuns
from .server import VisdomServerError, ensure_server, visdom_answers
from .visdom_client import VisdomClient, VisdomRequestError, VisdomUnavailable

log = logging.getLogger("visualizer")

EXIT_NO_DATA = 1
EXIT_VISDOM = 2


def add_source_argument(parser: argparse.ArgumentParser) -> None:
    """``--pickle_dir`` (and its dashed spelling ``--pickle-dir``)."""
    parser.add_argument(
        "--pickle_dir",
        "--pickle-dir",
        dest="pickle_dir",
        required=True,
        metavar="DIR",
        help="a run's snapshot store (<checkpoints>/<name>/pickle), a directory of runs, "
        "or s3://bucket/prefix/<name>/pickle",
    )


def build_parser() -> argparse.ArgumentParser:
    """The follow command's arguments."""
    parser = argparse.ArgumentParser(
        prog="run-visualizer",
        description="Show training runs live in visdom: replay each snapshot store, then follow it.",
    )
    add_source_argument(parser)
    parser.add_argument(
        "--server",
        default="127.0.0.1",
        help="visdom host (default 127.0.0.1; started there if none answers)",
    )
    parser.add_argument("--port", type=int, default=8097, help="visdom port (default 8097)")
    parser.add_argument(
        "--env",
        default=None,
        help="visdom env (default: the run's name; a prefix when there are several runs)",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_POLL_INTERVAL,
        metavar="SECONDS",
        help="polling fallback for filesystems without file events, and the fastest S3 "
        f"poll (default {DEFAULT_POLL_INTERVAL})",
    )
    parser.add_argument(
        "--max-points",
        type=int,
        default=DEFAULT_MAX_POINTS,
        metavar="N",
        help=f"points drawn per trace, min/max envelope kept (default {DEFAULT_MAX_POINTS})",
    )
    parser.add_argument(
        "--no-start-server",
        action="store_true",
        help="never start a visdom server; wait for one instead",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="read everything, update visdom, and exit (0 on success)",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    )
    return parser


def parse_host(server: str) -> str:
    """``--server`` as a bare host; ``http://host`` is accepted too."""
    return urlparse(server).hostname if "://" in server else server


def configure_logging(level: str) -> None:
    """Timestamped log lines on stderr."""
    logging.basicConfig(
        level=getattr(logging, level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def main(argv: list[str] | None = None) -> int:
    """Follow (or with ``--once``, ingest) ``--pickle_dir`` into visdom; the exit status."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    host = parse_host(args.server)
    client = VisdomClient(host, args.port)
    try:
        follower = Follower(
            args.pickle_dir,
            client,
            env=args.env,
            poll_interval=args.poll_interval,
            max_points=args.max_points,
            max_idle_interval=DEFAULT_MAX_IDLE_INTERVAL,
        )
    except ValueError as err:  # a malformed s3:// URL, a too small --max-points
        log.error("%s", err)
        return EXIT_NO_DATA
    if args.once and isinstance(follower.runs, LocalRuns) and not follower.runs.discover():
        log.error("no snapshot store found: expected %s", follower.runs.waiting_for())
        return EXIT_NO_DATA

    server = None
    try:
        if args.no_start_server:
            if not visdom_answers(host, args.port):
                if args.once:
                    log.error("no visdom server answers at %s (and --no-start-server)", client.url)
                    return EXIT_VISDOM
                log.warning("no visdom server answers at %s yet; waiting for one", client.url)
        else:
            server = ensure_server(host, args.port, start=True)
            if server is not None and args.once:
                log.warning(
                    "started visdom at %s for --once: it stops when this program exits", client.url
                )
    except VisdomServerError as err:
        log.error("%s", err)
        return EXIT_VISDOM

    print(f"visdom: {client.url}", flush=True)
    try:
        if args.once:
            return _once(follower)
        return _follow(follower)
    finally:
        if server is not None:
            server.stop()


def _once(follower: Follower) -> int:
    try:
        follower.run_once()
    except NoRunsError as err:
        log.error("%s", err)
        return EXIT_NO_DATA
    except (VisdomUnavailable, VisdomRequestError) as err:
        log.error("%s", err)
        return EXIT_VISDOM
    for name, feed in follower.feeds.items():
        log.info("run %r: %d points drawn in env %r", name, feed.data.points, feed.display.env)
    return 0


def _follow(follower: Follower) -> int:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: follower.stop())
    try:
        follower.run()
    except KeyboardInterrupt:
        follower.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
