"""The one redaction rule of the project.

Whatever stores or prints options, URLs or messages that may quote them (metadata,
checkpoints, logs, errors) goes through :func:`redact` or :func:`redact_text`. A secret
is the value of a secret-like name (:func:`is_secret_name`) as a key, a query parameter
or ``NAME=value``, and the login in a URL (``user:password@``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from run_core.values import plain

REDACTED = "***"
# Matched against a name in snake case (camelCase split first): a word or part of one, or
# the last word for the words that also name counts and settings. ``token`` and ``key`` name
# a secret as the name's last word (``hub_token``, ``api_key``, ``X-Amz-Security-Token``),
# not before another (``pad_token_id``, ``num_key_value_heads``) nor in the plural
# (``average_tokens_across_devices``, ``max_tokens``); a tokenizer's special tokens
# (``pad_token``, ``eos_token``) are text, not secrets.
_SECRET_NAME = re.compile(
    r"passw|secret|credential|auth(?!ors?(?:[^a-z]|$))|cookie|signature|"
    r"(?<!pad_|bos_|eos_|unk_|sep_|cls_)(?<!mask_)token$|"
    r"(?:^|[^a-z])(?:pwd|key|apikey|accesskey)$|(?:api|access|private)_?key"
)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
# scheme://userinfo@ : the greedy userinfo ends at the authority's last '@'.
_URL_LOGIN = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<login>[^\s/?#@]*(?:@[^\s/?#@]*)*)@"
)
# name=value (query parameters, NAME=value, repr'd keyword arguments) and 'name': value (dict reprs).
_ASSIGNMENT = re.compile(
    r"(?P<name>(?<![\w.-])[\w.-]+)(?P<sep>=|(?P<q>['\"]):\s*)"
    r"(?P<value>'[^']*'|\"[^\"]*\"|[^\s&#'\",;)}\]]*)"
)


def is_secret_name(name: str) -> bool:
    """True for a key, parameter or variable name that says it holds a secret
    (``password``, ``api_key``, ``apiKey``, ``AWS_SECRET_ACCESS_KEY``, ``token``, ``hub_token``,
    ``auth``, ...); False for names that merely contain one of those words
    (``average_tokens_across_devices``, ``pad_token_id``, ``num_key_value_heads``)."""
    return bool(_SECRET_NAME.search(_CAMEL.sub(r"\1_\2", name).lower().replace("-", "_")))


def redact(options: Mapping[Any, Any]) -> dict[str, Any]:
    """:func:`plain` copy of ``options`` with secrets, at any depth, replaced by :data:`REDACTED`.

    Values of secret-like keys go whole; in every other string, what
    :func:`redact_text` finds (URL logins, secret-like parameters).
    """
    return {
        str(key): REDACTED
        if is_secret_name(str(key)) and value not in (None, "")
        else _redact_value(value)
        for key, value in options.items()
    }


def redact_text(text: str) -> str:
    """``text`` (a URL, a command line, a message) with its secrets replaced by :data:`REDACTED`.

    ``scheme://user:password@`` becomes ``scheme://user:***@`` and a login
    without a password (a token) ``scheme://***@``; the value of a secret-like
    ``name=value`` (query parameter, environment variable, keyword argument) or
    ``'name': value`` becomes ``***``.
    """
    return _ASSIGNMENT.sub(_redact_assignment, _URL_LOGIN.sub(_redact_login, text))


def _redact_login(match: re.Match[str]) -> str:
    user, has_password, _ = match["login"].partition(":")
    login = f"{user}:{REDACTED}" if has_password else REDACTED
    return f"{match['scheme']}{login}@"


def _redact_assignment(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[:1] in ("'", '"') else ""
    if not value or not is_secret_name(match["name"]):
        if quote:  # a quoted value may hold assignments of its own: 'env?token=...'
            return f"{match['name']}{match['sep']}{quote}{redact_text(value[1:-1])}{quote}"
        return match[0]
    return f"{match['name']}{match['sep']}{quote}{REDACTED}{quote}"


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_redact_value(item) for item in value]
    if isinstance(value, str):
        return redact_text(plain(value))
    return plain(value)
