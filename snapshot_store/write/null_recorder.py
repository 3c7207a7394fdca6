"""What ``Recorder(...)`` is on every rank but global rank 0: a recorder whose calls do nothing.

nanoGPT guards each write with ``if master_process:`` and Lightning's loggers with
``@rank_zero_only``; here the one gate is :func:`~run_core.launch_env.rank_zero_only`,
asked once, when the recorder is made, and code that logs calls the same methods on
every rank: no file is touched, nothing is copied or queued, and no module checks the
rank again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from snapshot_store.write.recorder import Recorder


class NullRecorder(Recorder):
    """A :class:`~snapshot_store.Recorder` of another rank: every call records nothing."""

    def __init__(self, store_dir: str | os.PathLike[str], **_options: Any) -> None:
        self.store_dir = Path(store_dir)
        self.closed = False

    def log(self, values: Mapping[str, Any], step: int, *args: Any, **kwargs: Any) -> None:
        """Records nothing."""

    def log_scalar(self, name: str, value: Any, step: int, *args: Any, **kwargs: Any) -> None:
        """Records nothing."""

    def log_image(self, name: str, image: Any, step: int, *args: Any, **kwargs: Any) -> None:
        """Records nothing."""

    def log_record(
        self, kind: str, tag: str, value: Any, step: int, *args: Any, **kwargs: Any
    ) -> None:
        """Records nothing."""

    def set_status(self, **fields: Any) -> None:
        """Records nothing."""

    def set_options(self, options: Mapping[str, Any] | None, name: str = "") -> None:
        """Records nothing."""

    def flush(self, timeout: float = 10.0) -> bool:
        """Nothing to write: True at once."""
        return True

    def close(self, state: str = "finished") -> None:
        """Nothing to close; :attr:`closed` as a recorder's would be."""
        self.closed = True
