"""``python -m visualizer.server [--host H] [--port P] [--env-path DIR]``: an offline-safe visdom server.

In the foreground for people who want a server outside any training run; with
the hidden ``--child`` flag it is the child process :class:`~visualizer.server.process.VisdomServer`
starts, which patches visdom and serves (:mod:`visualizer.server.child`).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from run_core.exit_codes import ExitCode

from .child import run_child
from .endpoint import DEFAULT_HOST, DEFAULT_VISDOM_PORT, VisdomEndpoint
from .process import VisdomServer, VisdomServerError

log = logging.getLogger("visualizer.server")  # not __main__ under -m


def _run_foreground(args: argparse.Namespace) -> None:
    """Serve until interrupted, for people who want a server outside any training run."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    env_path = Path(args.env_path) if args.env_path else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with VisdomServer(args.endpoint, env_path=env_path) as server:
        log.info("visdom is serving at %s; Ctrl-C stops it", server.url)
        try:
            while server.running and not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: serve visdom in the foreground (or, internally, be the child)."""
    parser = argparse.ArgumentParser(
        prog="python -m visualizer.server", description="Run an offline-safe visdom server."
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_VISDOM_PORT, help="port (default %(default)s)"
    )
    parser.add_argument(
        "--env-path",
        default=None,
        metavar="DIR",
        help="where visdom keeps envs (default ~/.visdom)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--login", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--owned", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--static-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.endpoint = VisdomEndpoint.parse(args.host, args.port)
    except ValueError as err:
        parser.error(f"argument --host: {err}")
    try:
        if args.child:
            run_child(args)
        else:
            _run_foreground(args)
    except VisdomServerError as exc:
        log.error("%s", exc)
        return ExitCode.UNAVAILABLE
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
