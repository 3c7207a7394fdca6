"""A full disk while training: the error that stops a run cleanly, and how to recognise one.

No torch here: the CLI catches :class:`DiskFullError` without importing it.
"""

from __future__ import annotations

import errno

# A full disk or an exhausted quota: what no retry in the same second can fix.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


class DiskFullError(Exception):
    """A checkpoint did not fit on its filesystem; the file it would replace is untouched.

    One argument (the message), so it crosses process boundaries (spawned workers) whole.
    """


def out_of_space(err: BaseException | None) -> bool:
    """Whether ``err``, or an error it was raised from, is a full disk or quota.

    ``torch.save`` reports a failed write as a ``RuntimeError`` ("unexpected pos")
    raised while handling the ``OSError``, which this finds in the chain.
    """
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError) and err.errno in NO_SPACE:
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False
