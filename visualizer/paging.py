"""Read a long history a few megabytes at a time, so memory does not grow with its length.

:meth:`StoreReader.poll` returns everything new at once, as Python objects
(about 130 bytes a point). For a million-point replay that transient dominates
the visualizer's memory. :class:`PagedSource` wraps a ``Source`` and reveals
segments to the reader in order, a budget of bytes per listing, so each poll
holds only a page; the visualizer keeps the points in compact arrays.
"""

from __future__ import annotations

from snapshot_store import format as fmt
from snapshot_store.reader import Source

DEFAULT_PAGE_BYTES = 8 << 20


class PagedSource:
    """A ``Source`` whose listing shows not-yet-read segments a page at a time.

    Segments once shown stay shown, so growth of the active segment is read as
    usual; documents (meta, status) are always shown.
    """

    def __init__(self, source: Source, page_bytes: int = DEFAULT_PAGE_BYTES) -> None:
        self.source = source
        self.page_bytes = page_bytes
        self._shown: set[str] = set()
        self.more = False  # the last listing held segments back: poll again at once

    def describe(self, name: str) -> str:  # noqa: D102
        return self.source.describe(name)

    def read(self, name: str, offset: int = 0) -> bytes:  # noqa: D102
        return self.source.read(name, offset)

    def list(self) -> dict[str, tuple]:  # noqa: D102
        listing = self.source.list()
        hidden = sorted(
            (parsed[1], name)
            for name in listing
            if name not in self._shown and (parsed := fmt.parse_segment_name(name))
        )
        budget = self.page_bytes
        for _, name in hidden:
            if budget <= 0:
                break
            self._shown.add(name)
            budget -= listing[name][0]
        self.more = any(name not in self._shown for _, name in hidden)
        return {
            name: version
            for name, version in listing.items()
            if name in self._shown or not fmt.parse_segment_name(name)
        }
