"""The one protocol of the display loop's panes: a run's env, the comparison, the runs index."""

from __future__ import annotations

from typing import Protocol, TypeVar

Shown = TypeVar("Shown", contravariant=True)


class Pane(Protocol[Shown]):
    """What the display loop (:class:`~visualizer.panes.screen.Screen`) asks of every pane kind.

    ``Shown`` is what a pane draws: one run's data, every run's, or each run with its env.
    """

    @property
    def pending(self) -> bool:
        """True when points are held back until a later redraw slot."""
        ...

    def draw(self, shown: Shown, /, now: float | None = None, force: bool = False) -> bool:
        """Send visdom what of ``shown`` it does not show yet; True if anything was sent."""
        ...

    def invalidate(self) -> None:
        """Forget what the server shows (a restarted server): the next draw sends it all."""
        ...
