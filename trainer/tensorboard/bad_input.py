"""What a SummaryWriter method does with input it can not store: one warning, the run goes on.

TensorBoard raises into the training loop for a value it can not convert; a
monitor should not end a run over one bad value, so each method's ValueError
or TypeError is a warning naming the tag. A step outside int64 is the caller's
error, not the value's, and is raised as TensorBoard raises it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from snapshot_store.format.schema import StepRangeError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., None])


def skips_bad_input(method: F) -> F:
    """Turn a ValueError or TypeError of ``method`` into one warning naming the tag: the run goes on.

    A step outside int64 is raised.
    """

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except StepRangeError:
            raise
        except (ValueError, TypeError) as err:
            tag = args[0] if args and isinstance(args[0], str) else kwargs.get("tag", "")
            log.warning("%s(%r): %s; that value is not recorded", method.__name__, tag, err)

    return guarded  # type: ignore[return-value]
