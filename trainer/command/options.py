"""Command-line options generated from :mod:`trainer.training.config`.

Each config field with a command-line form becomes one dashed option
(``--batch-size``); the underscore spelling of the seeds' scripts
(``--batch_size``, ``--gpu_ids``) and any alias the field names are accepted
too, hidden from ``--help``. Values are checked by the config itself, so
``trainer train`` and ``trainer launch`` report the same error as ``fit``.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from typing import Any, NoReturn

from trainer.command.recipe import RecipeConfig
from trainer.training.config import OptionError, RunConfig, UsageError

_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off"}
_GROUPS = ("data", "run", "optimisation", "logging", "alerts")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), so a mistake reads as one clear line.

    Abbreviations are off: ``--n-epoch`` must be an error, not ``--n-epochs``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default only where it says something (not None, not already in the help)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, argparse.SUPPRESS) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def str2bool(text: str) -> bool:
    """True/False in any letter case (and 1/0, yes/no, on/off), as DeepLIIF's ``--remote True``."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (use True or False)")


def _typed(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {_article(kind)}") from None

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _article(kind: type) -> str:
    return {"int": "an integer", "float": "a number"}.get(kind.__name__, kind.__name__)


def _add_field(group: argparse._ArgumentGroup, f: dataclasses.Field[Any]) -> None:
    meta = f.metadata
    dashed = "--" + f.name.replace("_", "-")
    kwargs: dict[str, Any] = {"dest": f.name, "help": meta["help"]}
    if meta.get("flag"):
        kwargs["action"] = "store_true"
    else:
        kind = meta.get("kind")
        kwargs["type"] = str2bool if kind == "bool" else _typed(kind) if kind else str
        for key in ("choices", "metavar", "required"):
            if key in meta:
                kwargs[key] = meta[key]
        if meta.get("append"):
            kwargs["action"] = "append"
    if not meta.get("required"):  # argparse appends to a list default only
        kwargs["default"] = list(f.default) if isinstance(f.default, tuple) else f.default
    group.add_argument(dashed, **kwargs)
    hidden = {"--" + f.name, *meta.get("aliases", ())} - {dashed}
    for spelling in sorted(hidden):
        alias = {k: v for k, v in kwargs.items() if k not in ("help", "required", "default")}
        group.add_argument(spelling, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **alias)


def train_parser(prog: str = "trainer train", description: str = "") -> Parser:
    """The parser of every train option (also used by ``launch`` to check them first)."""
    parser = Parser(prog=prog, description=description, formatter_class=_HelpFormatter)
    groups = {name: parser.add_argument_group(name) for name in _GROUPS}
    for config in (RecipeConfig, RunConfig):
        for f in dataclasses.fields(config):
            if f.metadata.get("command_line", True):
                _add_field(groups[f.metadata["group"]], f)
    return parser


def parse_train_args(
    argv: Sequence[str], prog: str = "trainer train", description: str = ""
) -> tuple[RunConfig, RecipeConfig]:
    """Parse and check ``trainer train`` options; a bad value raises :class:`UsageError`."""
    values = vars(train_parser(prog, description).parse_args(argv))
    try:
        return _build(RunConfig, values), _build(RecipeConfig, values)
    except OptionError as err:
        raise UsageError(
            f"--{err.name.replace('_', '-')} {_shown(err.value)}: {err.problem}"
        ) from None


def _build(config: type[Any], values: dict[str, Any]) -> Any:
    names = {f.name for f in dataclasses.fields(config)}
    picked = {k: v for k, v in values.items() if k in names}
    for f in dataclasses.fields(config):
        if f.metadata.get("append") and picked.get(f.name) is not None:
            picked[f.name] = tuple(picked[f.name])  # a repeatable option is a tuple in a config
    return config(**picked)


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return " ".join(map(str, value))
    return str(value)
