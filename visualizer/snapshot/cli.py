"""``python -m visualizer snapshot --pickle-dir DIR_OR_S3 [--runs REGEX] [--compare N]
[--group-by KEY] [--out FILE.html | s3://bucket/prefix/FILE.html [--expires 7d]]``.

The file is built whole in memory, then written to a temporary file beside ``--out`` and
renamed over it (:func:`~visualizer.sources.export_target.export_target`), so a failed
snapshot leaves no file, and an older one stays as it was; an ``s3://`` ``--out`` is
uploaded in one request and a presigned link to it printed (:mod:`.upload`). Each failure is one line on
standard error, naming what is wrong and what to do, and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import sys

from run_core.exit_codes import ExitCode
from visualizer.model.smoothing import DEFAULT_SMOOTHING
from visualizer.options import add_source_argument, group_by, smoothing
from visualizer.options import runs as runs_regex
from visualizer.panes.compare import DEFAULT_COMPARE, MAX_COMPARE
from visualizer.panes.groups import DEFAULT_GROUP_BY
from visualizer.sources.export_target import ExportWriteError, export_target
from visualizer.sources.s3 import S3ReadError

from .content import build
from .page import AssetMissingError, render
from .upload import DEFAULT_EXPIRES, SnapshotUploadError, expires, is_s3_target, target, upload

DEFAULT_OUT = "snapshot.html"


def _count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_COMPARE:
        raise argparse.ArgumentTypeError(f"a number of runs from 1 to {MAX_COMPARE}, not {text!r}")
    return count


def parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The snapshot command's options."""
    out = argparse.ArgumentParser(
        prog=prog,
        description="Write the runs as one self-contained HTML file: the runs table, each run's "
        "plots with every stored point (zoom in to see them), its config and summary. It opens "
        "in a browser from file:// with no server and no network.",
    )
    add_source_argument(out)
    out.add_argument(
        "--runs",
        type=runs_regex,
        default="",
        metavar="REGEX",
        help="only the runs whose name matches REGEX (searched, in linear time: RE2; "
        "default: every run)",
    )
    out.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="FILE.html",
        help=f"the file to write (default: {DEFAULT_OUT}), whole or not at all; "
        "s3://bucket/prefix/FILE.html uploads it and prints a link that opens it",
    )
    out.add_argument(
        "--expires",
        type=expires,
        default=None,
        metavar="TIME",
        help=f"with an s3:// --out: how long the printed link opens the file, such as 7d, "
        f"12h or 30m (default: {DEFAULT_EXPIRES}, S3's longest)",
    )
    out.add_argument(
        "--compare",
        type=_count,
        default=DEFAULT_COMPARE,
        metavar="N",
        help="the comparison overlays the N most recently updated of the runs, as the live "
        f"comparison does (default: {DEFAULT_COMPARE}); every run has its own section",
    )
    out.add_argument(
        "--group-by",
        type=group_by,
        default=DEFAULT_GROUP_BY,
        metavar="KEY",
        help="in the comparison, runs whose config differs only by KEY are drawn as their mean "
        f"and min-max band, as the live comparison draws them (default: {DEFAULT_GROUP_BY}; "
        "'' for none)",
    )
    out.add_argument(
        "--smoothing",
        type=smoothing,
        default=DEFAULT_SMOOTHING,
        help=f"the page's smoothing weight when opened, 0 to below 1 (default: {DEFAULT_SMOOTHING})",
    )
    return out


def _fail(prog: str, message: str, code: ExitCode) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return code


def _checked(args: argparse.Namespace, usage: argparse.ArgumentParser) -> None:
    """Refuse an ``s3://`` --out that names no file, and --expires without one."""
    if not is_s3_target(args.out):
        if args.expires is not None:
            usage.error("--expires is for an --out s3://bucket/prefix/FILE.html link")
        return
    try:
        target(args.out)
    except ValueError as err:
        usage.error(f"argument --out: {err}")
    if args.expires is None:
        args.expires = expires(DEFAULT_EXPIRES)


def _written(args: argparse.Namespace, text: str) -> str | None:
    """Write or upload ``text`` where --out says; the presigned link for an upload."""
    if is_s3_target(args.out):
        return upload(text.encode("utf-8"), args.out, args.expires)
    with export_target(args.out, binary=False) as out:
        out.write(text)
    return None


def main(argv: list[str], prog: str = "python -m visualizer snapshot") -> int:
    """Write the snapshot ``argv`` asks for; the exit status."""
    usage = parser(prog)
    args = usage.parse_args(argv)
    _checked(args, usage)
    try:
        data = build(
            args.pickle_dir,
            args.runs,
            smoothing=args.smoothing,
            group_by=args.group_by,
            compare=args.compare,
        )
        text = render(data)
        link = _written(args, text)
    except FileNotFoundError as err:
        return _fail(prog, f"{err}; give --pickle-dir a run's folder or a directory of runs",
                     ExitCode.NO_DATA)  # fmt: skip
    except ExportWriteError as err:
        return _fail(
            prog, f"{err}; choose an --out FILE in a folder you can write", ExitCode.FAILED
        )
    except AssetMissingError as err:
        return _fail(prog, str(err), ExitCode.UNAVAILABLE)
    except (S3ReadError, SnapshotUploadError) as err:  # credentials, a bucket, an endpoint
        return _fail(prog, str(err), err.exit_code)
    except ValueError as err:  # a malformed s3:// URL
        return _fail(prog, str(err), ExitCode.USAGE)
    except KeyboardInterrupt:
        return _fail(prog, "interrupted; nothing was written", ExitCode.INTERRUPTED)
    points = sum(series["values"]["n"] for series in data["series"])
    size = len(text.encode("utf-8"))
    done = "uploaded" if link else "wrote"
    print(f"{done} {args.out} ({size / 1e6:.1f} MB): {len(data['table']['rows'])} runs, {points:,} points",
          file=sys.stderr)  # fmt: skip
    if link:
        print(f"the link below opens it for {_duration(args.expires)}:", file=sys.stderr)
        print(link)
    return ExitCode.OK


def _duration(seconds: int) -> str:
    """``seconds`` as the largest whole unit: 7 days, 12 hours, 90 seconds."""
    unit, size = next(
        (unit, size)
        for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
        if seconds % size == 0
    )
    count = seconds // size
    return f"{count} {unit}{'' if count == 1 else 's'}"
