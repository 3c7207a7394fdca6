"""The filter text a person types (the runs table's filter box, ``Api().runs(filters="...")``),
compiled to the MongoDB-style dict :mod:`visualizer.api.filters` evaluates: one evaluator.

    lr>0.01 and seed==3                 optimizer=="adam"
    state=="running" or name~"^lr-"     not (config.model.depth>=4 or summary.val/loss>0.3)

A comparison is ``KEY OP VALUE``: OP one of ``== != < <= > >=`` (``=`` is ``==``) or ``~`` (a
regular expression searched in a text value, RE2); comparisons join with ``and``, ``or``,
``not`` and parentheses (``not`` binds tightest, then ``and``, then ``or``). KEY is ``name``,
``state``, ``created_at``, ``config.KEY``, ``summary.KEY`` (``summary_metrics.KEY``), or a
bare KEY: the config's value when the run's config has it, else the summary's. VALUE is a
number, a quoted text (``"adam"`` or ``'adam'``), ``true``, ``false``, ``null``, or a bare word
(text). Text that does not start with KEY OP (after any ``not`` or ``(``), as ``lr-0.1``,
``^run-01`` or ``sweep lr=0.1``, is no expression: the caller searches names with it, as the
filter box did before expressions.
"""

from __future__ import annotations

import re
from typing import Any

MAX_FILTER_CHARS = 2000  # characters; longer is refused before it is read
MAX_FILTER_DEPTH = 32  # parentheses and nots inside each other
GRAMMAR = (
    "KEY OP VALUE with OP one of == != < <= > >= (= is ==) or ~ (a regular expression), "
    "joined by and, or, not and parentheses; KEY name, state, config.KEY, summary.KEY or a "
    "bare KEY (the config's, else the summary's); VALUE a number, \"text\", true, false or null"
)
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>==|!=|<=|>=|=|<|>|~|\(|\))
    | (?P<word>[A-Za-z_][\w./-]*)
    )""",
    re.VERBOSE,
)
_COMPARISONS = {
    "==": "$eq", "=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte",
    "~": "$regex",
}  # fmt: skip
_STARTS = re.compile(r"\s*(?:(?:not\b|\()\s*)*[A-Za-z_][\w./-]*\s*(?:[=<>~]|!=)", re.IGNORECASE)
_WORDS = {"true": True, "false": False, "null": None, "none": None}
_OWN_FIELDS = ("name", "display_name", "state", "created_at")
_PREFIXES = ("config.", "summary.", "summary_metrics.")
_UNESCAPE = re.compile(r"\\([\\\"'])")

Token = tuple[str, str, int]  # kind, text, where it starts


def _tokens(text: str) -> list[Token]:
    """``text``'s tokens; ValueError naming the first character that starts none."""
    tokens: list[Token] = []
    at = 0
    while text[at:].strip():
        found = _TOKEN.match(text, at)
        if found is None or found.lastgroup is None:
            where = len(text) - len(text[at:].lstrip())
            why = f"{text[where]!r} (character {where + 1}) starts no key, operator or value"
            raise _refuse(text, why)
        kind = found.lastgroup
        tokens.append((kind, found.group(kind), found.start(kind)))
        at = found.end()
    return tokens


def is_expression(text: str) -> bool:
    """Whether ``text`` is a filter expression: it starts with KEY OP (after any ``not`` or
    ``(``); other text (``lr-0.1``, ``^run-01``, ``(?=x)``) is searched for in names."""
    return len(text) > MAX_FILTER_CHARS or _STARTS.match(text) is not None


def parse(text: str) -> dict[str, Any]:
    """The filters dict ``text`` says (see the module); ValueError of one line naming what is
    wrong and the grammar."""
    if len(text) > MAX_FILTER_CHARS:
        raise _refuse(text, f"longer than {MAX_FILTER_CHARS} characters")
    parser = _Parser(text, _tokens(text))
    result = parser.either(0)
    if parser.at < len(parser.tokens):
        raise parser.error("expected and, or or the end")
    return result


def _refuse(text: str, why: str) -> ValueError:
    return ValueError(f"filter {text!r:.80}: {why}; accepted: {GRAMMAR}")


def _joined(op: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return parts[0] if len(parts) == 1 else {op: parts}


def _field(key: str, condition: dict[str, Any]) -> dict[str, Any]:
    """``condition`` on ``key``: a bare key is the config's when the run has it, else the
    summary's."""
    if key in _OWN_FIELDS or key.startswith(_PREFIXES):
        return {key: condition}
    config, summary = f"config.{key}", f"summary.{key}"
    return {
        "$or": [
            {"$and": [{config: {"$exists": True}}, {config: condition}]},
            {"$and": [{config: {"$exists": False}}, {summary: condition}]},
        ]
    }


class _Parser:
    """Recursive descent over the tokens, at most :data:`MAX_FILTER_DEPTH` deep."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text, self.tokens, self.at = text, tokens, 0

    def error(self, why: str) -> ValueError:
        if self.at < len(self.tokens):
            _kind, token, where = self.tokens[self.at]
            return _refuse(self.text, f"{why} at {token!r:.20} (character {where + 1})")
        return _refuse(self.text, f"{why} at the end")

    def _word(self, *words: str) -> bool:
        if self.at < len(self.tokens):
            kind, token, _where = self.tokens[self.at]
            if kind == "word" and token.lower() in words:
                self.at += 1
                return True
        return False

    def either(self, depth: int) -> dict[str, Any]:
        parts = [self.every(depth)]
        while self._word("or"):
            parts.append(self.every(depth))
        return _joined("$or", parts)

    def every(self, depth: int) -> dict[str, Any]:
        parts = [self.one(depth)]
        while self._word("and"):
            parts.append(self.one(depth))
        return _joined("$and", parts)

    def one(self, depth: int) -> dict[str, Any]:
        if depth >= MAX_FILTER_DEPTH:
            raise self.error(f"nested more than {MAX_FILTER_DEPTH} deep")
        if self._word("not"):
            return {"$nor": [self.one(depth + 1)]}
        if self.at < len(self.tokens) and self.tokens[self.at][:2] == ("op", "("):
            self.at += 1
            inside = self.either(depth + 1)
            if self.at >= len(self.tokens) or self.tokens[self.at][:2] != ("op", ")"):
                raise self.error("expected )")
            self.at += 1
            return inside
        return self.comparison()

    def comparison(self) -> dict[str, Any]:
        if self.at >= len(self.tokens) or self.tokens[self.at][0] != "word":
            raise self.error("expected a key")
        key = self.tokens[self.at][1]
        self.at += 1
        if self.at >= len(self.tokens) or self.tokens[self.at][1] not in _COMPARISONS:
            raise self.error(f"expected an operator after {key!r}")
        op = _COMPARISONS[self.tokens[self.at][1]]
        self.at += 1
        value = self.value()
        if op == "$regex" and not isinstance(value, str):
            raise self.error("~ takes a text value")
        return _field(key, {op: value})

    def value(self) -> Any:
        if self.at >= len(self.tokens) or self.tokens[self.at][0] == "op":
            raise self.error("expected a value")
        kind, token, _where = self.tokens[self.at]
        self.at += 1
        if kind == "num":
            return int(token) if re.fullmatch(r"[-+]?\d+", token) else float(token)
        if kind == "str":
            return _UNESCAPE.sub(r"\1", token[1:-1])
        return _WORDS.get(token.lower(), token)
