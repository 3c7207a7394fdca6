"""The follow command's options."""

from __future__ import annotations

import os

import pytest

from visualizer import options


def test_help_leaves_out_the_internal_parent_pid_which_still_works(capsys):
    with pytest.raises(SystemExit):
        options.build_parser().parse_args(["--help"])
    assert "--parent-pid" not in capsys.readouterr().out
    args = options.build_parser().parse_args(
        ["--pickle-dir", "d", "--parent-pid", str(os.getpid())]
    )
    assert args.parent_pid == os.getpid()
