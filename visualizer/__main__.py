"""``python -m visualizer [follow options]`` or ``python -m visualizer export --pickle_dir DIR``."""

from __future__ import annotations

import argparse
import logging
import sys

from . import cli
from .export import export_csv


def export_main(argv: list[str]) -> int:
    """Print every scalar record under ``--pickle_dir`` as CSV on stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m visualizer export",
        description="Print every scalar (latest value per step) as CSV: "
        "run,group,tag,step,epoch,wall_time,value.",
    )
    cli.add_source_argument(parser)
    args = parser.parse_args(argv)
    cli.configure_logging("WARNING")
    try:
        export_csv(args.pickle_dir, sys.stdout)
    except FileNotFoundError as err:
        logging.getLogger("visualizer").error("%s", err)
        return cli.EXIT_NO_DATA
    return 0


def main(argv: list[str] | None = None) -> int:
    """Dispatch: ``export`` or following (the default)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export"]:
        return export_main(argv[1:])
    if argv[:1] == ["follow"]:
        argv = argv[1:]
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
