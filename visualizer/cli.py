"""The visualizer's command lines: follow snapshot stores into visdom, or export them as CSV.

``run-visualizer``, ``python run_visualizer_local.py`` and ``python -m
visualizer [follow]`` run :func:`main`; ``python -m visualizer export`` runs
:func:`export_main`. Exit statuses come from :class:`ExitCode`: USAGE for bad
options, NO_DATA when there is nothing to show, UNAVAILABLE when visdom does not
answer (or its port is held by something else, or by the visdom another
visualizer started, unless ``--no-start-server`` shares it on purpose, or its
page's JS/CSS files are missing and can not be fetched), INTERRUPTED on Ctrl-C, and OK
when following ends on SIGTERM or with ``--parent-pid``'s process, after a last
pass over the stores.

Following prints ``visdom: <url>`` on stdout (the trainer and ``scripts/demo.sh``
look for that prefix): the page of the run's env, or of the comparison env when
several runs are followed. It is printed once that env has been drawn, so not
while the store does not exist yet; when a directory of runs gains its second
run, the comparison env's URL follows on a line of its own. Before that, the
server must serve every script, stylesheet and icon its page loads (else UNAVAILABLE:
a blank page is no view); a server that is not up yet while following with
``--no-start-server`` is not checked.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from contextlib import nullcontext

from run_core.exit_codes import ExitCode
from visualizer.alerts.options import alerting
from visualizer.baseline import BaselineChoice
from visualizer.panes.compare import Selection
from visualizer.panes.view import ViewSettings
from visualizer.server.assets import fix_command
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import page_asset_failures, visdom_answers
from visualizer.server.process import VisdomServer, VisdomServerError, ensure_server
from visualizer.sources.download import CsvDownloads
from visualizer.sources.export import FILE_KINDS, add_export_arguments, export, export_files
from visualizer.sources.export_target import ExportWriteError, export_target
from visualizer.sources.runs import LocalRuns, RunSpec
from visualizer.sources.s3 import S3ReadError
from visualizer.visdom_client import VisdomClient, VisdomRequestError, VisdomUnavailableError

from .follower import Follower, NoRunsError
from .options import add_source_argument, build_parser
from .options import runs as runs_regex
from .parent import stop_on_sigterm, watch_parent

log = logging.getLogger("visualizer")


def _configure_logging(level: str) -> None:
    """Timestamped log lines on stderr."""
    logging.basicConfig(
        level=getattr(logging, level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _one_file(source: str) -> bytes:
    """The runs at ``source`` (a store, or the followed root) as ``python -m visualizer
    snapshot`` writes them: a page's "as one file" link."""
    from visualizer.snapshot.content import build  # the snapshot's parts: when a link asks
    from visualizer.snapshot.page import render

    return render(build(source)).encode()


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Follow (or with ``--once``, draw once) ``--pickle-dir`` into visdom; the exit status."""
    parser = parser if parser is not None else build_parser()
    args = parser.parse_args(argv)
    _configure_logging(args.log_level)
    try:
        endpoint = VisdomEndpoint.parse(args.server, args.port)
    except ValueError as err:
        parser.error(f"argument --server: {err}")
    client = VisdomClient(endpoint)
    downloads = None if args.once else CsvDownloads()
    if downloads is not None:
        downloads.render_file = _one_file
    # Serving before the follower starts: its pages link the CSVs (and the sweep's) from the first.
    with downloads or nullcontext():
        try:
            follower = Follower(
                args.pickle_dir,
                client,
                env=args.env,
                poll_interval=args.poll_interval,
                max_points=args.max_points,
                on_page=lambda env: print(f"visdom: {endpoint.env_url(env)}", flush=True),
                view=ViewSettings(args.smoothing, args.x_axis, args.log_y),
                selection=Selection(args.runs, args.sort_by, args.sort_descending, args.group_by),
                downloads=downloads,
                compare=args.compare,
                memory_budget_mb=args.memory_budget,
            )
        except ValueError as err:  # a malformed s3:// URL, a too small --max-points
            parser.error(str(err))
        client.events.on_event = follower.wake  # a change made on the page is drawn at once
        baseline = BaselineChoice.for_source(str(follower.runs))
        if args.baseline is not None:
            baseline.choose(args.baseline)
        follower.screen.baseline = baseline.name
        follower.screen.remember_baseline = baseline.choose  # one chosen on the page
        with alerting(args, parser, follower):  # a wrong --alert-cmd ends here, before visdom
            if args.once:
                return _check_then_run(follower, args)
            if args.parent_pid is not None:
                watch_parent(args.parent_pid, follower.stop)
            with stop_on_sigterm(follower.stop):
                return _interruptible(lambda: _follow(follower, args))


def _check_then_run(follower: Follower, args: argparse.Namespace) -> int:
    """``--once``: NO_DATA when there is nothing to draw (checked before starting visdom), else draw."""
    runs = follower.runs
    try:
        specs = runs.discover()
        if not specs and isinstance(runs, LocalRuns):
            log.error("no snapshot store found: expected %s", runs.waiting_for())
            return ExitCode.NO_DATA
        if unmatched := _none_selected(follower, specs):
            log.error("%s", unmatched)
            return ExitCode.NO_DATA
    except S3ReadError as err:
        log.error("%s", err)
        return err.exit_code
    return _interruptible(lambda: _run(follower, args))


def _none_selected(follower: Follower, specs: list[RunSpec]) -> str | None:
    """Why ``--runs`` leaves nothing to show of the runs ``specs`` found; None when it selects one."""
    if specs and not any(follower.selection.matches(spec.name) for spec in specs):
        return follower.selection.none_match(follower.runs, (spec.name for spec in specs))
    return None


def _follow(follower: Follower, args: argparse.Namespace) -> int:
    """Follow until stopped; the exit status. (If ``--runs`` selects none of the runs there
    once all are read, the follower says so once and goes on: a matching run may still start.)"""
    return _run(follower, args)


def export_main(argv: list[str], prog: str | None = None) -> int:
    """Print every scalar record under ``--pickle-dir`` as CSV on stdout; the exit status."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Print every scalar value (in logged order) as CSV: "
        "run,group,tag,step,epoch,wall_time,value; with --kind runs, a row a run; with another "
        "--kind, those records as JSON lines; with --format parquet, one Parquet file; with --kind "
        "projector or graph_events, TensorBoard's own files in --out DIR.",
    )
    add_source_argument(parser)
    add_export_arguments(parser, runs_regex)  # issues 13 and 35: record kinds, runs, parquet
    args = parser.parse_args(argv)
    _configure_logging("WARNING")
    binary = args.format == "parquet"
    terminal = args.output is None and sys.stdout is not None and sys.stdout.isatty()
    if binary and terminal:
        parser.error(
            "--format parquet writes binary: --output FILE, or redirect it (> runs.parquet)"
        )

    if (args.kind in FILE_KINDS) != (args.out is not None) or (binary and args.out):
        parser.error(f"--kind {' and '.join(FILE_KINDS)} write files: --out DIR goes with them")

    def export_records() -> int:
        try:
            if args.kind in FILE_KINDS:
                count = export_files(args.pickle_dir, args.kind, args.out, runs=args.runs)
                print(f"{count} written: tensorboard --logdir {args.out}", file=sys.stderr)
            else:
                with export_target(args.output, binary) as out:
                    export(
                        args.pickle_dir, out, args.kind, args.format, args.runs, raw=args.raw_csv
                    )
        except ExportWriteError as err:  # a full disk, a read-only target, a closed output
            log.error("%s", err)
            return ExitCode.FAILED
        except FileNotFoundError as err:
            log.error("%s", err)
            return ExitCode.NO_DATA
        except S3ReadError as err:  # bad credentials, a missing bucket, no endpoint
            log.error("%s", err)
            return err.exit_code
        except ImportError as err:  # --format parquet without pyarrow: the extra to install
            log.error("%s", err)
            return ExitCode.USAGE
        except ValueError as err:  # a malformed s3:// URL, parquet of a JSON lines kind
            parser.error(str(err))
        return ExitCode.OK

    return _interruptible(export_records)


def _interruptible(command: Callable[[], int]) -> int:
    """``command()``, or INTERRUPTED when Ctrl-C ends it."""
    try:
        return command()
    except KeyboardInterrupt:
        log.warning("interrupted")
        return ExitCode.INTERRUPTED


def _run(follower: Follower, args: argparse.Namespace) -> int:
    """Make sure visdom is there, then draw once or follow; the exit status.

    The follower prints ``visdom: <url of the run's env>`` once that env is
    drawn (see :func:`main`).
    """
    endpoint = follower.client.endpoint
    follower.prefetch()  # 10,000 runs are listed and read while visdom starts
    try:
        server = _ensure_visdom(endpoint, start=not args.no_start_server, once=args.once)
    except VisdomServerError as err:
        log.error("%s", err)
        return ExitCode.UNAVAILABLE
    try:
        if (server is not None or visdom_answers(endpoint)) and not _page_renders(endpoint):
            return ExitCode.UNAVAILABLE
        if args.once:
            return _once(follower)
        if server is not None:  # its memory counts in --memory-budget
            follower.runset.visdom_pid = server.pid
        follower.run()  # until SIGTERM, or until --parent-pid's process ends
        return ExitCode.OK
    finally:
        follower.client.close()  # stop listening for page events
        if server is not None:
            server.stop()


def _ensure_visdom(endpoint: VisdomEndpoint, start: bool, once: bool) -> VisdomServer | None:
    """The server this program had to start, if any; VisdomServerError when visdom is needed and absent.

    Following without starting a server waits for one instead.
    """
    if not start and not once and not visdom_answers(endpoint):
        log.warning("no visdom server answers at %s yet; waiting for one", endpoint.url)
        return None
    server = ensure_server(endpoint, start=start)
    if server is not None and once:
        log.warning(
            "started visdom at %s for --once: it stops when this program exits", endpoint.url
        )
    return server


def _page_renders(endpoint: VisdomEndpoint) -> bool:
    """Whether visdom serves every script, stylesheet and icon of its page; logs why not."""
    failures = page_asset_failures(endpoint)
    if failures:
        shown = ", ".join(failures[:3]) + (
            f" and {len(failures) - 3} more" if len(failures) > 3 else ""
        )
        log.error(
            "visdom at %s does not serve %d file(s) its page loads (%s): the page would be blank. "
            "Fix: run `%s` where that visdom is installed, then restart it",
            endpoint.url,
            len(failures),
            shown,
            fix_command(),
        )
    return not failures


def _once(follower: Follower) -> int:
    """Draw every run once; the exit status."""
    try:
        follower.run_once()
    except NoRunsError as err:
        log.error("%s", err)
        return ExitCode.NO_DATA
    except S3ReadError as err:
        log.error("%s", err)
        return err.exit_code
    except (VisdomUnavailableError, VisdomRequestError) as err:
        log.error("%s", err)
        return ExitCode.UNAVAILABLE
    for name, feed in follower.feeds.items():
        log.info("run %r: %d points drawn in env %r", name, feed.data.points, feed.env)
    return ExitCode.OK
