"""README.md and docs/*.md say only what is so: the paths they name exist, and every command runs.

Every command of every ``bash`` block either is run as written by a test named in
:data:`RUN_AS_WRITTEN` (and this module checks that the test exists and reads that
very command), or is checked here for real and cheaply: its program, script,
module or make target exists and the real argument parser accepts its options.
A command neither way fails, naming itself, so no command is left unchecked.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_install import readme_laptop_commands
from tests.e2e.test_readme import SECTIONS, block_commands, readme_commands
from tests.fixtures.runs.checkout import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

README_TEST = "tests/e2e/test_readme.py::test_the_readme_commands_run_as_written_in_order"
INSTALL_TEST = "tests/e2e/test_install.py::test_the_readme_install_renders_the_runs_plots"

# Commands (whitespace collapsed) that a test runs as written, and that test.
RUN_AS_WRITTEN = {
    "python -m trainer make-dataset data/shapes": README_TEST,
    "python -m trainer train --dataroot data/shapes --name exp1 --remote True --num-epochs 2": README_TEST,
    "torchrun --nproc_per_node 2 -m trainer train --dataroot data/shapes --name exp2 "
    "--batch-size 16 --remote True --num-epochs 2": README_TEST,
    "python -m trainer launch --nproc-per-node 2 --dataroot data/shapes --name exp3 "
    "--remote True --num-epochs 2": README_TEST,
    "for lr in 0.01 0.001; do python -m trainer train --dataroot data/shapes --name lr-$lr "
    "--lr $lr --remote True --num-epochs 2 done": README_TEST,
    "python run_visualizer_local.py --pickle-dir checkpoints/exp1/pickle": README_TEST,
    "python run_visualizer_local.py --pickle-dir checkpoints": README_TEST,
    "python run_visualizer_local.py --pickle-dir checkpoints --runs '^lr-' --sort-by val/loss": README_TEST,
    # The venv line: the test makes the venv with Python's bundled pip and with the newest.
    "python3 -m venv venv && . venv/bin/activate": INSTALL_TEST,
    "PIP_CONSTRAINT=$PWD/constraints.txt PIP_BUILD_CONSTRAINT=$PWD/constraints.txt "
    "pip install '.[visualizer]'": INSTALL_TEST,
    "python run_visualizer_local.py --pickle-dir DIR": INSTALL_TEST,  # DIR: the test's run
}

# What the shell would put in for the variables the pages' commands use.
SAMPLE_ENV = {
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/secret",
    "PWD": str(ROOT),
}
# Standard tools of the docs' shell recipes (a tmpfs for the full-disk example).
SYSTEM_TOOLS = {"mkdir", "mount", "umount", "head", "echo"}
PACKAGES = "trainer|snapshot_store|transfer_plugins|visualizer|integrations|remote_train_monitor"
REPO_PATH = re.compile(
    rf"(?<![\w./:~-])((?:{PACKAGES}|bench|tests|scripts|examples|docs)/[\w./-]*)"
)


def _flat(command: str) -> str:
    return " ".join(command.split())


def docs_commands() -> list[tuple[str, str]]:
    """(page, command) for every command of every ``bash`` block of the pages."""
    found = []
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            found += [(page.name, _flat(c)) for c in block_commands(block)]
    return found


def _test_exists(test_id: str) -> bool:
    path, name = test_id.split("::")
    tree = ast.parse((ROOT / path).read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def _commands_run_by(test_id: str) -> set[str]:
    if test_id == README_TEST:
        # test_readme leaves out what reads a bucket (s3://): those are checked below.
        run = [c for s in SECTIONS for c in readme_commands(s) if "s3://" not in c]
    else:
        run = readme_laptop_commands()
    return {_flat(c) for c in run}


def test_the_run_as_written_table_names_real_tests_that_run_those_commands():
    written = {command for _, command in docs_commands()}
    for command, test_id in RUN_AS_WRITTEN.items():
        assert _test_exists(test_id), f"{test_id} (named for {command!r}) does not exist"
        assert command in _commands_run_by(test_id), f"{test_id} does not run {command!r}"
        assert command in written, f"{command!r} is in no page any more: drop it from the table"


def test_every_repository_path_the_pages_name_exists():
    missing = [
        f"{page.name}: {path}"
        for page in PAGES
        for path in REPO_PATH.findall(page.read_text())
        if "..." not in path and not (ROOT / path.rstrip(".")).exists()  # "a/...": a pattern
    ]
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of ``page``'s headings."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_between_the_pages_leads_somewhere():
    broken = []
    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.name}: {target}#{anchor}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)


# --- the cheap real checks, by program ------------------------------------------------------


def _simple_commands(command: str) -> list[list[str]]:
    """``command`` split at ``;``, ``&&`` and ``|``, redirections dropped, variables put in."""
    lexer = shlex.shlex(os.path.expandvars(_with_sample_env(command)), posix=True,
                        punctuation_chars=True)  # fmt: skip
    lexer.whitespace_split = True
    simple: list[list[str]] = [[]]
    words = iter(lexer)
    for word in words:
        if word in (";", "&&", "|"):
            simple.append([])
        elif word in (">", ">>"):
            next(words)  # the file written to
        else:
            simple[-1].append(word)
    return [words for words in simple if words]


def _with_sample_env(command: str) -> str:
    for name, value in SAMPLE_ENV.items():
        command = command.replace(f"${name}", value).replace(f"${{{name}}}", value)
    return command


def _help_lists(argv: list[str], options: list[str]) -> None:
    """``argv --help`` of the real command lists every option used (its parser is not importable)."""
    done = subprocess.run([sys.executable, *argv, "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for option in options:
        if option.startswith("-"):
            assert re.search(rf"(?<![\w-]){re.escape(option)}\b", done.stdout), (argv, option)


def _trainer(args: list[str], tmp_path: Path) -> None:
    from trainer.command.launch import _parser as launch_parser
    from trainer.command.options import parse_train_args

    sub, rest = args[0], args[1:]
    if sub == "train":
        parse_train_args(rest)
    elif sub == "launch":
        _, train_argv = launch_parser().parse_known_args(rest)
        parse_train_args(train_argv)
    elif sub in ("make-dataset", "sync"):
        _help_lists(["-m", "trainer", sub], rest)
    else:
        assert args == ["--help"], f"no check for trainer {sub}"
        _help_lists(["-m", "trainer"], [])


def _visualizer(args: list[str], tmp_path: Path) -> None:
    from visualizer.cli import build_parser

    if args[:1] == ["export"]:
        # The real export, in an empty directory: its options parse, then there is no store.
        done = subprocess.run([sys.executable, "-m", "visualizer", *args], cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)),
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 3, done.stderr  # ExitCode.NO_DATA, not 2 (usage)
    elif args[:1] == ["snapshot"]:
        from visualizer.snapshot.cli import parser

        parser().parse_args(args[1:])
    else:
        build_parser().parse_args(args[1:] if args[:1] == ["follow"] else args)


def _bench(args: list[str], tmp_path: Path) -> None:
    from bench.__main__ import SUITES

    assert set(args) <= set(SUITES), args


def _assets(args: list[str], tmp_path: Path) -> None:
    assert not args and importlib.util.find_spec("visualizer.server.assets")


MODULES: dict[str, Callable[[list[str], Path], None]] = {
    "trainer": _trainer,
    "visualizer": _visualizer,
    "visualizer.server.assets": _assets,
    "bench": _bench,
}


def _python(args: list[str], tmp_path: Path) -> None:
    if args[0] == "-m":
        assert args[1] in MODULES, f"no check for python -m {args[1]}"
        MODULES[args[1]](args[2:], tmp_path)
        return
    assert (ROOT / args[0]).is_file(), f"{args[0]} does not exist"
    if args[0] == "run_visualizer_local.py":
        _visualizer(args[1:], tmp_path)
    else:
        assert args[0].startswith("examples/") and len(args) == 1, args


def _torchrun(args: list[str], tmp_path: Path) -> None:
    from torch.distributed.run import get_args_parser

    parsed = get_args_parser().parse_args(args)
    if parsed.module:
        MODULES[parsed.training_script](parsed.training_script_args, tmp_path)
    else:
        assert (ROOT / parsed.training_script).is_file(), parsed.training_script


def _make(args: list[str], tmp_path: Path) -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    assert set(args) <= targets, f"make targets that do not exist: {set(args) - targets}"


def _source(args: list[str], tmp_path: Path) -> None:
    venv = re.search(r"^VENV\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert venv and args == [f"{venv.group(1)}/bin/activate"], args  # the venv make builds


def _export(args: list[str], tmp_path: Path) -> None:
    assert all(re.fullmatch(r"[A-Za-z_]\w*=\S*", arg) for arg in args), args


PROGRAMS: dict[str, Callable[[list[str], Path], None]] = {
    "python": _python,
    "python3": _python,
    "torchrun": _torchrun,
    "make": _make,
    "source": _source,
    "export": _export,
}


def check_command(command: str, tmp_path: Path) -> None:
    """Check each simple command of ``command`` with its program's real parser."""
    for words in _simple_commands(command):
        while re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):  # VAR=value before the program
            words = words[1:]
        program = words[0].removeprefix(".venv/bin/")
        if program in SYSTEM_TOOLS:
            continue
        assert program in PROGRAMS, f"no check for {program!r} in {command!r}"
        PROGRAMS[program](words[1:], tmp_path)


@pytest.mark.parametrize("page, command", docs_commands())
def test_every_command_is_run_as_written_or_parsed_by_its_real_parser(page, command, tmp_path):
    if command in RUN_AS_WRITTEN:
        assert _test_exists(RUN_AS_WRITTEN[command])  # and it runs it: the table test
        return
    check_command(command, tmp_path)
