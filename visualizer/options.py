"""The follow command's options: the parser, one function per group of options, and their
argparse types, each of which turns bad text into one clear message."""

from __future__ import annotations

import argparse
import math

from visualizer.alerts.options import add_alert_arguments
from visualizer.follower import DEFAULT_POLL_INTERVAL
from visualizer.model.decimate import MIN_POINTS
from visualizer.model.smoothing import DEFAULT_SMOOTHING, check_smoothing
from visualizer.panes.compare import DEFAULT_COMPARE, compile_runs, parse_sort_by
from visualizer.panes.display import DEFAULT_MAX_POINTS
from visualizer.panes.groups import DEFAULT_GROUP_BY, parse_group_by
from visualizer.panes.view import X_AXES
from visualizer.runset import DEFAULT_MEMORY_BUDGET_MB
from visualizer.server.endpoint import DEFAULT_HOST, DEFAULT_VISDOM_PORT, SERVER_FORMS


def _whole(text: str, least: int, what: str) -> int:
    """``text`` as a whole number of at least ``least``; else the message ``what`` finishes."""
    try:
        number = int(text)
    except ValueError:
        number = least - 1
    if number < least:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return number


def _above_zero(text: str, unit: str, example: str) -> float:
    """``text`` as a finite number above zero; else a message naming ``unit``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of {unit} above 0 (e.g. {example})"
        )
    return value


def pid(text: str) -> int:
    """argparse type of ``--parent-pid``: a positive process id."""
    return _whole(text, 1, "a process id")


def seconds(text: str) -> float:
    """argparse type of ``--poll-interval``: a finite number of seconds above zero."""
    return _above_zero(text, "seconds", "0.5")


def max_points(text: str) -> int:
    """argparse type of ``--max-points``: a whole number of at least MIN_POINTS."""
    return _whole(text, MIN_POINTS, f"a whole number of points, at least {MIN_POINTS}")


def count(text: str) -> int:
    """argparse type of ``--compare``: a whole number of runs, at least 1."""
    return _whole(text, 1, "a whole number of runs, at least 1")


def megabytes(text: str) -> float:
    """argparse type of ``--memory-budget``: megabytes, above zero."""
    return _above_zero(text, "megabytes", "300")


def smoothing(text: str) -> float:
    """argparse type of ``--smoothing``: a weight in [0, 1)."""
    try:
        return check_smoothing(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a smoothing weight: at least 0 and below 1 (0 turns it off; "
            f"TensorBoard's default is {DEFAULT_SMOOTHING})"
        ) from None


def x_axis(text: str) -> str:
    """argparse type of ``--x-axis``: step, relative or wall."""
    if text not in X_AXES:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(X_AXES)}")
    return text


def runs(text: str) -> str:
    """argparse type of ``--runs``: a regular expression that compiles."""
    try:
        compile_runs(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{err} (e.g. 'lr-0\\.01' or '^sweep3-')") from None
    return text


def sort_by(text: str) -> tuple[str, str]:
    """argparse type of ``--sort-by``: a series' name as logged."""
    try:
        return parse_sort_by(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def group_by(text: str) -> str:
    """argparse type of ``--group-by``: a config key, or "" for no groups."""
    try:
        return parse_group_by(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def add_source_argument(parser: argparse.ArgumentParser) -> None:
    """``--pickle-dir`` (and the older spelling ``--pickle_dir``)."""
    parser.add_argument(
        "--pickle-dir",
        "--pickle_dir",
        dest="pickle_dir",
        required=True,
        metavar="DIR",
        help="a run's snapshot store (<checkpoints>/<name>/pickle), a directory of runs, "
        "or s3://bucket/prefix/<name>/pickle",
    )


def build_parser(
    prog: str | None = None, usage: str | None = None, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The follow command's arguments; ``prog``, ``usage`` and ``epilog`` as the entry point shows them."""
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=usage,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the epilog's lines
        description="Show training runs live in visdom: replay each snapshot store, then follow it.\n"
        "Prints `visdom: <url>` of the run's page (the comparison page for several runs)\n"
        "once the run is found.",
    )
    add_source_argument(parser)
    _add_visdom_options(parser)
    _add_drawing_options(parser)
    _add_selection_options(parser)
    _add_scale_options(parser)
    _add_mode_options(parser)
    add_alert_arguments(parser)
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=LOG_LEVELS,
        help="least severe message logged on stderr (default %(default)s)",
    )
    return parser


def _add_visdom_options(parser: argparse.ArgumentParser) -> None:
    """Where visdom is, and the env runs are drawn in."""
    parser.add_argument(
        "--server",
        default=DEFAULT_HOST,
        metavar="HOST|URL",
        help=f"visdom server: {SERVER_FORMS} (default %(default)s); one is started "
        "there when none answers, unless --no-start-server",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"visdom port (default: the port in --server, else {DEFAULT_VISDOM_PORT})",
    )
    parser.add_argument(
        "--env",
        default=None,
        help="visdom env (default: the run's name; a prefix when there are several runs)",
    )


def _add_drawing_options(parser: argparse.ArgumentParser) -> None:
    """How often runs are read, and how their plots are drawn at first."""
    parser.add_argument(
        "--poll-interval",
        type=seconds,
        default=DEFAULT_POLL_INTERVAL,
        metavar="SECONDS",
        help="polling fallback for filesystems without file events, and the fastest S3 poll; "
        "above 0 (default %(default)s)",
    )
    parser.add_argument(
        "--max-points",
        type=max_points,
        default=DEFAULT_MAX_POINTS,
        metavar="N",
        help=f"points drawn per series (its raw and smoothed curves share them), at least "
        f"{MIN_POINTS}; the min/max envelope is kept "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--smoothing",
        type=smoothing,
        default=DEFAULT_SMOOTHING,
        metavar="W",
        help="weight of TensorBoard's smoothing (debiased moving average over every point), "
        "in [0, 1); 0 draws the raw curve only; changeable on the page (default %(default)s)",
    )
    parser.add_argument(
        "--x-axis",
        type=x_axis,
        default="step",
        metavar="|".join(X_AXES),
        help="x axis of every plot at first: step, time since the run started, or wall-clock "
        "time; changeable on the page (default %(default)s)",
    )
    parser.add_argument(
        "--log-y",
        action="store_true",
        help="plot values on a log scale at first; changeable on the page",
    )


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    """Which runs are followed, and the comparison's order."""
    parser.add_argument(
        "--runs",
        type=runs,
        default="",
        metavar="REGEX",
        help="follow and compare only the runs whose name matches REGEX (searched, in linear time: RE2); "
        "the comparison page can narrow them further (default: every run)",
    )
    parser.add_argument(
        "--sort-by",
        type=sort_by,
        default=None,
        metavar="NAME",
        help="sort the runs table and the comparison's table by each run's best value of this "
        "series, named as logged, e.g. val/loss or train_loss, the best first (a loss's "
        "smallest, an accuracy's largest); the N best are compared "
        "(default: the runs table by last update, the comparison's by run name)",
    )
    parser.add_argument(
        "--sort-descending",
        action="store_true",
        help="with --sort-by: a series' largest value is its best, whatever its name says",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="RUN",
        help="the run the others are measured against: the runs table gives each run's "
        "difference to it, the comparison draws it black and dashed, the slower and worse "
        "alert rules judge against it; remembered for this --pickle-dir ('' forgets it; "
        "default: the one chosen before, if any)",
    )
    parser.add_argument(
        "--group-by",
        type=group_by,
        default=DEFAULT_GROUP_BY,
        metavar="KEY",
        help="on the comparison page, draw runs whose config differs only by KEY as one curve: "
        "their mean with a min-max band; '' draws every run alone; changeable on the page "
        "(default %(default)s)",
    )


def _add_scale_options(parser: argparse.ArgumentParser) -> None:
    """How many runs are compared and held in memory, out of many."""
    parser.add_argument(
        "--compare",
        type=count,
        default=DEFAULT_COMPARE,
        metavar="N",
        help="runs overlaid on the comparison page: the N best by --sort-by; without it, of a "
        "finished sweep the N best by its most logged series, of a live one the N most "
        "recent; with more runs than N only those are read whole until one is opened "
        "from the runs table (default %(default)s)",
    )
    parser.add_argument(
        "--memory-budget",
        type=megabytes,
        default=DEFAULT_MEMORY_BUDGET_MB,
        metavar="MB",
        help="memory the followed runs' series and the visdom server started here may hold; "
        "past it the runs opened from the runs table leave memory and visdom, least recently "
        "opened first, read back from the store when opened again "
        "(default %(default)g)",
    )


def _add_mode_options(parser: argparse.ArgumentParser) -> None:
    """Starting a server, drawing once, and the parent process (internal)."""
    parser.add_argument(
        "--no-start-server",
        action="store_true",
        help="never start a visdom server; wait for one instead (--once: fail); "
        "also: share the visdom another visualizer started on this port",
    )
    parser.add_argument(
        "--once", action="store_true", help="read everything, update visdom once, and exit"
    )
    parser.add_argument(
        "--parent-pid",
        type=pid,
        default=None,
        metavar="PID",
        # Internal: the trainer's live view passes its own pid (not for people).
        help=argparse.SUPPRESS,
    )
