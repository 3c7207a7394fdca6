"""Which envs the open pages show, told to the viewer whenever that changes.

visdom knows each open page's env (its socket's ``eid``, set when the page asks for
its env; ``None`` here until it does: :mod:`visualizer.server.child`) but tells no
one. This patch sends every listening client (``/vis_socket``: the viewer's page
event listener) ``{"command": "pages", "envs": [...]}`` when the set of envs shown
changes, and to a listener as it connects. The viewer then reads a live S3 run no
open page shows once a minute, not every second (a request or three each time).
"""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger(__name__)

PAGES_COMMAND = "pages"  # the message's "command"; its "envs": the envs open pages show


def page_envs(subs: dict[str, Any]) -> list[str]:
    """The envs the pages in visdom's ``subs`` show, sorted (a comparison page shows several)."""
    envs: set[str] = set()
    for page in list(subs.values()):
        eid = getattr(page, "eid", None)
        if isinstance(eid, str):
            envs.add(eid)
        elif isinstance(eid, list | dict):  # visdom's compare view: a list of envs
            envs.update(e for e in eid if isinstance(e, str))
    return sorted(envs)


class _PagesTold:
    """The last set of envs told, and the telling."""

    def __init__(self) -> None:
        self.envs: list[str] | None = None

    def tell(self, handler: Any, listeners: list[Any] | None = None) -> None:
        """Send the envs shown to ``listeners`` (None: every listener, if the set changed)."""
        envs = page_envs(handler.subs)
        if listeners is None:
            if envs == self.envs:
                return
            listeners = list(handler.sources.values())
        self.envs = envs
        message = json.dumps({"command": PAGES_COMMAND, "envs": envs})
        for listener in listeners:
            try:
                listener.write_message(message)
            except Exception as err:  # a listener closing as it is told: it reconnects
                log.debug("pages shown not told to a listener: %s", err)


def tell_pages_watched(web_handlers: Any, socket_handlers: Any) -> None:
    """Patch visdom's handlers to tell listeners the envs open pages show, as it changes."""
    told = _PagesTold()

    def after(method: Any) -> Any:
        def then_tell(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            told.tell(self)
            return result

        return then_tell

    # A page names its env (or envs, comparing) by these posts; it leaves by closing its socket.
    web_handlers.EnvHandler.post = after(web_handlers.EnvHandler.post)
    web_handlers.CompareHandler.post = after(web_handlers.CompareHandler.post)
    socket_handlers.SocketHandler.on_close = after(socket_handlers.SocketHandler.on_close)
    listener_open = socket_handlers.VisSocketHandler.open

    def open_and_tell(self: Any) -> None:
        listener_open(self)
        if self in self.sources.values():  # not refused (a login)
            told.tell(self, [self])

    socket_handlers.VisSocketHandler.open = open_and_tell
    socket_handlers.SocketHandler.on_message = _no_forged_commands(
        socket_handlers.SocketHandler.on_message
    )


def _no_forged_commands(on_message: Any) -> Any:
    """A page forwards pane events to the listeners; one carrying a server's ``command`` (a
    forged list of the pages open) is dropped."""

    def on_page_message(self: Any, message: Any) -> None:
        try:
            msg = json.loads(message)
        except (TypeError, ValueError, RecursionError):
            msg = None  # visdom's own handler answers what is not JSON
        if isinstance(msg, dict) and msg.get("cmd") == "forward_to_vis":
            data = msg.get("data")
            if isinstance(data, dict) and "command" in data:
                return
        on_message(self, message)

    return on_page_message
