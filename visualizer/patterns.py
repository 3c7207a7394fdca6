"""Regular expressions a person types (the runs table's filter, the comparison's runs box,
``--runs``, the Api's ``$regex``), matched in time linear in the name.

Python's ``re`` backtracks: ``^(a+)+$`` over a 30-character name took seconds, and the
follow loop that matched it stopped drawing and answering SIGTERM. RE2 (``google-re2``,
the ``visualizer`` extra) never backtracks. A pattern RE2 can not take (a backreference,
a lookaround) that ``re`` compiles is matched as plain text, as the table's filter
matches what is no regular expression at all. Without RE2 installed (the Api alone),
``re`` matches: a reader's own script, not a shared page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

try:
    import re2
except ImportError:  # the Api without the visualizer extra: re, as before
    re2 = None

Search = Callable[[str], bool]


def _every(name: str) -> bool:
    """Every name holds the empty text."""
    return True


def is_pattern(text: str) -> str | None:
    """Why ``text`` is no regular expression (``re``'s syntax), or None."""
    try:
        re.compile(text)
    except (re.error, TypeError, ValueError, OverflowError, RecursionError) as err:
        return str(err)
    return None


@lru_cache(maxsize=64)  # asked again for each name a filter or selection meets
def searcher(text: str, ignore_case: bool = False) -> Search:
    """Whether a name holds a match of ``text``: RE2's search, else ``text`` as plain text
    (see the module); ``ignore_case`` for either. The empty text (no filter, no ``--runs``)
    holds every name without a search: 100,000 names were seconds of RE2 calls."""
    if not text:
        return _every
    if is_pattern(text) is None and re2 is None:
        compiled = re.compile(text, re.IGNORECASE if ignore_case else 0)
        return lambda name: compiled.search(name) is not None
    if re2 is not None and is_pattern(text) is None:
        options = re2.Options()
        options.log_errors = False  # a pattern RE2 refuses is expected: no line on stderr
        options.case_sensitive = not ignore_case
        try:
            pattern = re2.compile(text, options=options)
        except re2.error:
            pass
        else:
            return lambda name: pattern.search(name) is not None
    if ignore_case:
        lowered = text.lower()
        return lambda name: lowered in name.lower()
    return lambda name: text in name
