"""``python -m visualizer [follow] --pickle-dir DIR [options]``, ``python -m visualizer export
--pickle-dir DIR`` or ``python -m visualizer snapshot --pickle-dir DIR``."""

from __future__ import annotations

import sys

from . import cli, options
from .snapshot import cli as snapshot_cli

PROG = "python -m visualizer"
USAGE = (
    "%(prog)s [follow] --pickle-dir DIR [options]\n       %(prog)s export --pickle-dir DIR"
    "\n       %(prog)s snapshot --pickle-dir DIR [--out FILE.html]"
)
EPILOG = f"""commands:
  follow    the default: replay each run into visdom, then follow it (the options above)
  export    print every scalar as CSV on stdout, or a row a run (--kind runs), or Parquet
            (--format parquet); see `{PROG} export --help`
  snapshot  write the runs as one HTML file that opens offline, every point inside;
            see `{PROG} snapshot --help`"""


def main(argv: list[str] | None = None) -> int:
    """Dispatch to ``export``, ``snapshot`` or to following (the default); the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["snapshot"]:
        return snapshot_cli.main(argv[1:], prog=f"{PROG} snapshot")
    if argv[:1] == ["export"]:
        return cli.export_main(argv[1:], prog=f"{PROG} export")
    if argv[:1] == ["follow"]:
        argv = argv[1:]
    return cli.main(argv, options.build_parser(prog=PROG, usage=USAGE, epilog=EPILOG))


if __name__ == "__main__":
    sys.exit(main())
