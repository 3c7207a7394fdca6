"""The visdom server's own process: visdom 0.2.4's ``run_server.main()``, patched before it starts.

:class:`visualizer.server.process.VisdomServer` runs ``python -m visualizer.server --child``,
which lands in :func:`run_child`. The patches, each for a fault seen with a page
left open for a whole run:

* **Bind exactly the host asked for** (visdom binds 127.0.0.1 or every interface).
* **No debug mode.** visdom turns tornado's ``debug`` on unconditionally: autoreload
  restarts the server when any imported file changes (a ``git pull`` under a running
  viewer), the restarted process then exits on its own argv, and tracebacks are
  served to the browser.
* **No page echo of our closes.** When the server tells a page to close a window,
  the page closes it and sends the same close back. The visualizer closes a window
  only to draw it again at once (a pane's order, an image pane's history), so that
  echo, arriving after the new window, deleted it: the pane then froze on the page.
  A page's close of a window the server closed in the last :data:`ECHO_WINDOW_S`
  seconds is dropped; a person closing a pane later still closes it.
* **Image histories that never shrink under an open page.** A page's image pane keeps
  its slider's position when the pane is drawn again in place; visdom 0.2.4's pane
  reads ``content[position]`` before it follows the new one, so a history shorter
  than the position blanked the whole page (an uncaught TypeError). Here a pane is
  drawn with every snapshot its message carries (stock visdom keeps the first), and
  an append past the message's ``opts.history`` drops the oldest: a pane keeps its
  length, and the page gets a two-operation patch.
* **A page opened before its env exists follows it.** visdom rendered such a page on
  the last env the browser had shown, and the env's windows never reached it: a
  URL opened as soon as it is printed (a run's comparison, made once two runs have
  data) stayed on another env.
* **A page gets no env's windows before it names its env.** visdom subscribes a new
  page's socket to ``main`` until the page's request for its env arrives: a window
  of ``main`` sent in between (the runs index, re-sent every few seconds in a run)
  was drawn on a page of another env, and stayed there.
* **The viewer told which envs open pages show** (:mod:`visualizer.server.watched`), so
  it reads a live S3 run nobody looks at once a minute.
* **Its own origin only.** visdom answers any ``Host`` and accepts writes and
  websockets from any page: a web page the user opens could read and wipe the
  plots by DNS rebinding, or post to it across origins. Here every handler
  answers by :func:`visualizer.origin.refusal`: a loopback server answers only
  loopback host names, and a request that carries an ``Origin`` (a browser's)
  must come from the page's own host and port.
* **Private files**: the cookie secret and the env files are created for the
  user alone (umask 077); an existing cookie secret is made private.
* **Its owner named.** A server a visualizer started for itself (``--owned``) sends
  that visualizer's pid in every answer (:data:`~visualizer.server.probes.OWNER_HEADER`):
  it stops when that visualizer exits, so another visualizer asked to start a server
  on its port refuses rather than draw into it.
* **No ``last_read_time`` error every 15 s**: the polling-socket monitor visdom
  starts reads that attribute from websocket handlers too, which have none.
* **The page's side** (:mod:`visualizer.server.page`): visdom's page script mended,
  served with our static dir and our style (each title shown once), and windows hashed
  as the page computes them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

from visualizer.origin import refusal
from visualizer.parent import watch_parent

from .endpoint import VisdomEndpoint
from .page import add_page_style, page_hash, serve_static_files
from .probes import OWNER_HEADER
from .watched import tell_pages_watched

# How long after the server closed a window a page's "close" of it is taken as its echo.
ECHO_WINDOW_S = 10.0


class _NoDebugSettings(dict[str, Any]):
    """visdom's tornado settings, where its ``settings["debug"] = True`` has no effect."""

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, False if key == "debug" else value)


def _no_debug(visdom_app: Any) -> None:
    settings = _NoDebugSettings(visdom_app.tornado_settings)
    settings.update(debug=False, autoreload=False, serve_traceback=False)
    visdom_app.tornado_settings = settings


def _bind(visdom_app: Any, host: str) -> None:
    original_listen = visdom_app.Application.listen

    def listen(self: Any, port: int, *args: Any, **kwargs: Any) -> Any:
        kwargs["address"] = host
        return original_listen(self, port, *args, **kwargs)

    visdom_app.Application.listen = listen


def _drop_close_echoes(web_handlers: Any, socket_handlers: Any) -> None:
    """Remember the windows the server closes; drop a page's close of one soon after."""
    closed: dict[tuple[str, str], float] = {}
    close_windows = web_handlers.CloseHandler.wrap_func

    def wrap_func(handler: Any, args: dict[str, Any]) -> None:
        now = time.monotonic()
        eid = web_handlers.extract_eid(args)
        if eid not in handler.state:
            return  # nothing to close (visdom's own handler would answer 500)
        wins = [args["win"]] if args.get("win") is not None else list(handler.state[eid]["jsons"])
        for key in [k for k, at in closed.items() if now - at > ECHO_WINDOW_S]:
            del closed[key]
        closed.update({(eid, str(win)): now for win in wins})
        close_windows(handler, args)

    on_message = socket_handlers.SocketHandler.on_message

    def on_page_message(self: Any, message: str | bytes) -> None:
        try:
            msg = json.loads(message)
            key = (msg.get("eid"), msg.get("data")) if msg.get("cmd") == "close" else None
        except (ValueError, AttributeError):
            key = None  # visdom's own handler answers malformed messages as it always did
        if key is not None and time.monotonic() - closed.get(key, float("-inf")) <= ECHO_WINDOW_S:
            logging.info("ignored a page's echo of closing window %r of env %r", key[1], key[0])
            return
        on_message(self, message)

    web_handlers.CloseHandler.wrap_func = staticmethod(wrap_func)
    socket_handlers.SocketHandler.on_message = on_page_message


def _image_histories(web_handlers: Any) -> None:
    """Draw an image_history pane with all its snapshots; past ``opts.history``, drop the oldest."""
    from visdom.utils.shared_utils import get_rand_id

    new_window = web_handlers.window

    def window(args: dict[str, Any]) -> dict[str, Any]:
        pane: dict[str, Any] = new_window(args)
        if pane.get("type") == "image_history":
            pane["content"] = [item["content"] for item in args["data"]]
            pane["selected"] = len(pane["content"]) - 1
        return pane

    update_packet = web_handlers.UpdateHandler.update_packet

    def bounded_update(pane: dict[str, Any], args: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        keep = (args.get("opts") or {}).get("history")
        item = args["data"][0]
        if pane["type"] != "image_history" or item.get("type") != "image_history":
            return update_packet(pane, args)
        if not isinstance(keep, int) or keep < 1 or len(pane["content"]) < keep:
            return update_packet(pane, args)
        drop = len(pane["content"]) - keep + 1
        del pane["content"][:drop]
        pane["content"].append(item["content"])
        pane["selected"] = keep - 1
        pane["contentID"] = get_rand_id()
        patch = [{"op": "remove", "path": "/content/0"}] * drop + [
            {"op": "add", "path": f"/content/{keep - 1}", "value": item["content"]},
            {"op": "replace", "path": "/selected", "value": keep - 1},
            {"op": "replace", "path": "/contentID", "value": pane["contentID"]},
        ]
        return pane, patch

    web_handlers.window = window
    web_handlers.UpdateHandler.update_packet = staticmethod(bounded_update)


def _envs_to_come(web_handlers: Any) -> None:
    """A page opened on an env that does not exist yet shows that env, and its windows as they
    come (visdom showed the last env the browser had, and the env's windows never arrived)."""
    gather_envs = web_handlers.gather_envs

    def get(self: Any, eid: str) -> None:
        items = gather_envs(self.state, env_path=self.env_path)
        if eid not in items and not _ENV_NAME_UNSAFE.search(eid):
            items = sorted([*items, eid])
        active = eid if eid in items else ""
        user = web_handlers.getpass.getuser()
        self.render(
            "index.html", user=user, items=items, active_item=active, wrap_socket=self.wrap_socket
        )

    web_handlers.EnvHandler.get = web_handlers.check_auth(get)


def _sockets_start_on_no_env(socket_handlers: Any) -> None:
    """A page's socket (websocket or polling) is on no env until the page asks for one."""
    for handler in (socket_handlers.SocketHandler, socket_handlers.SocketWrapper):
        handler.open = _on_no_env(handler.open)


def _on_no_env(open_socket: Any) -> Any:
    def open_on_no_env(self: Any) -> None:
        open_socket(self)
        self.eid = None  # visdom's "main"; every page posts for its env once registered

    return open_on_no_env


# visdom's page writes env names into a script's quoted strings, escaping HTML only.
_ENV_NAME_UNSAFE = re.compile(r"[\\\x00-\x1f\u2028\u2029]")


def _websockets_never_stale(socket_handlers: Any) -> None:
    # The monitor closes polling clients that stopped reading; a websocket closes itself.
    fresh = property(lambda self: time.time())
    socket_handlers.SocketHandler.last_read_time = fresh
    socket_handlers.VisSocketHandler.last_read_time = fresh


def _own_origin_only(loopback: bool) -> None:
    """Refuse foreign ``Host`` names (a loopback server) and cross-origin requests, in every handler."""
    from tornado.web import HTTPError, RequestHandler

    prepare = RequestHandler.prepare

    def checked_prepare(self: RequestHandler) -> Any:
        request = self.request
        origin = request.headers.get("Origin")
        why = refusal(request.host, origin, loopback)
        if why is not None:
            logging.warning(
                "refused a %s for host %r from the page of %r: %s",
                request.method,
                request.host,
                origin,
                why,
            )
            raise HTTPError(403, why)
        return prepare(self)

    RequestHandler.prepare = checked_prepare  # type: ignore[method-assign]


def _name_owner(pid: int) -> None:
    """Every answer, an error's too, carries the pid of the visualizer this server stops with."""
    from tornado.web import RequestHandler

    set_default_headers = RequestHandler.set_default_headers

    def with_owner(self: RequestHandler) -> None:
        set_default_headers(self)
        self.set_header(OWNER_HEADER, str(pid))

    RequestHandler.set_default_headers = with_owner  # type: ignore[method-assign]


def _private_files(cookie_secret: Path) -> None:
    os.umask(0o077)
    if cookie_secret.is_file():
        cookie_secret.chmod(0o600)


def patch_visdom(host: str, static_dir: str | None, owner_pid: int | None) -> None:
    """Apply every patch in the module docstring to visdom, before its Application is built.

    ``owner_pid``: the visualizer that started this server for itself, if one did.
    """
    from visdom.server import app as visdom_app
    from visdom.server.handlers import socket_handlers, web_handlers

    serve_static_files(visdom_app, static_dir)
    add_page_style(visdom_app)
    _no_debug(visdom_app)
    _bind(visdom_app, host)
    _drop_close_echoes(web_handlers, socket_handlers)
    _image_histories(web_handlers)
    _envs_to_come(web_handlers)
    _sockets_start_on_no_env(socket_handlers)
    _websockets_never_stale(socket_handlers)
    tell_pages_watched(web_handlers, socket_handlers)
    web_handlers.hash_md_window = page_hash
    _own_origin_only(VisdomEndpoint(host).is_loopback)
    if owner_pid is not None:
        _name_owner(owner_pid)
    _private_files(Path(visdom_app.DEFAULT_ENV_PATH) / "COOKIE_SECRET")


def run_child(args: argparse.Namespace) -> None:
    """Run visdom's own server main() in this process, patched, without its download step."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # One line per HTTP request would flood the log during training.
    logging.getLogger("tornado.access").setLevel(logging.WARNING)
    if args.parent_pid:
        # A killed parent must leave no stray server behind.
        watch_parent(args.parent_pid, lambda: os.kill(os.getpid(), signal.SIGTERM))
    # visdom's package imports torch when it can, which is slow and memory-hungry;
    # its server never uses it. A None entry makes that optional import fail fast.
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
    endpoint = args.endpoint
    patch_visdom(endpoint.host, args.static_dir, args.parent_pid if args.owned else None)
    argv = ["visdom.server", "-port", str(endpoint.port), "--hostname", endpoint.host]
    argv += ["-logging_level", "INFO"]
    if args.env_path:
        argv += ["-env_path", args.env_path]
    if endpoint.is_loopback:
        argv.append("-bind_local")
    if args.login:
        argv.append("-enable_login")
    sys.argv = argv  # visdom's main() parses sys.argv itself
    from visdom.server.run_server import main as visdom_main

    visdom_main()
