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


def test_group_by_takes_a_config_key_or_nothing(capsys):
    parser = options.build_parser()
    assert parser.parse_args(["--pickle-dir", "d"]).group_by == "seed"
    assert parser.parse_args(["--pickle-dir", "d", "--group-by", "trial"]).group_by == "trial"
    assert parser.parse_args(["--pickle-dir", "d", "--group-by", ""]).group_by == ""
    with pytest.raises(SystemExit):
        parser.parse_args(["--pickle-dir", "d", "--group-by", "seed "])
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.endswith(
        "argument --group-by: 'seed ' is not a config key: no spaces around it "
        "nor control characters (e.g. seed; '' turns grouping off)"
    )
