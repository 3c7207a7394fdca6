"""Start and stop a local visdom server that never downloads anything.

Stock ``python -m visdom.server`` first runs visdom's ``download_scripts()``,
which fetches JS/CSS from CDNs and breaks without internet. Here the child
process calls ``visdom.server.run_server.main()`` directly (no download step);
the assets come from ``scripts/provision_visdom_assets.py`` at install time, or,
when they are missing there, from a copy of visdom's static dir that
:func:`visualizer.assets.served_static_dir` completes in the user's cache.
:func:`page_asset_failures` checks that a server really serves what its page loads.

Foreground use: ``python -m visualizer.server [--host H] [--port P] [--env-path DIR]``.
Where the server listens, and its login, is a :class:`~visualizer.endpoint.VisdomEndpoint`.

visdom 0.2.4 quirks this module works around:

* ``main()`` takes its options from ``sys.argv`` (single-dash flags such as
  ``-port``), and ``--hostname`` only changes the printed URL: visdom binds
  either 127.0.0.1 (``-bind_local``) or every interface. The child therefore
  pins tornado's listen address to the requested host.
* ``-enable_login`` reads ``VISDOM_USERNAME``/``VISDOM_PASSWORD`` only when
  ``VISDOM_USE_ENV_CREDENTIALS`` is set (else it prompts on stdin), and keeps its
  cookie secret in ``~/.visdom/COOKIE_SECRET`` whatever ``-env_path`` says,
  exiting if that file and ``VISDOM_COOKIE`` are both missing (we then pass a
  random ``VISDOM_COOKIE``).
* The child patches visdom before it starts (:mod:`visualizer.visdom_child`): tornado's
  debug mode off, the index page served on tornado >= 6.6, a page's echo of our
  window closes dropped.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import http.client
import json
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from types import TracebackType
from urllib.parse import urljoin, urlsplit

from snapshot_store.exit_codes import ExitCode

from .assets import ProvisionError, served_static_dir
from .endpoint import DEFAULT_HOST, DEFAULT_PORT, PASSWORD_VAR, USERNAME_VAR, VisdomEndpoint
from .visdom_child import run_child

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 30
STOP_GRACE_S = 5.0
POLL_INTERVAL_S = 0.1
# visdom's login page says <title>Visdom Login</title> (its index page <title>visdom</title>).
_VISDOM_TITLE = re.compile(rb"<title>\s*visdom\b", re.IGNORECASE)
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


class VisdomServerError(RuntimeError):
    """A visdom server could not be started, or none answers where one is required."""


def _http(
    endpoint: VisdomEndpoint, method: str, path: str, body: bytes | None, timeout: float
) -> tuple[int, str, bytes]:
    """One HTTP request; returns (status, Server header, first 64 KiB of the body)."""
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.getheader("Server", ""), resp.read(64 * 1024)
    finally:
        conn.close()


def _is_env_list(body: bytes) -> bool:
    try:
        envs = json.loads(body)
    except ValueError:
        return False
    return isinstance(envs, list) and all(isinstance(e, str) for e in envs)


def visdom_answers(endpoint: VisdomEndpoint, timeout: float = 1.0) -> bool:
    """True only if a visdom server (not just any HTTP server) answers at ``endpoint``.

    Asks visdom's own API (``POST /env_state`` lists the envs); a server with
    login enabled refuses that, so then its login page must be the one served at ``/``.
    """
    try:
        status, server, body = _http(endpoint, "POST", "/env_state", b"{}", timeout)
        if not server.startswith("TornadoServer"):
            return False
        if status == 200:
            return _is_env_list(body)
        status, server, body = _http(endpoint, "GET", "/", None, timeout)
    except (OSError, http.client.HTTPException):
        return False
    return status == 200 and bool(_VISDOM_TITLE.search(body))


def _port_open(endpoint: VisdomEndpoint, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"(log {path} unreadable: {exc})"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


class VisdomServer:
    """A visdom server in a child process, bound to ``endpoint``, started without any download.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. On a
    non-loopback host visdom's login is enabled with the endpoint's username
    and password; without them :meth:`start` refuses.
    """

    def __init__(
        self,
        endpoint: VisdomEndpoint | None = None,
        env_path: Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.endpoint = endpoint if endpoint is not None else VisdomEndpoint()
        self.env_path = Path(env_path) if env_path is not None else None
        self.log_path = Path(log_path) if log_path is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._static_dir: Path | None = None

    @property
    def url(self) -> str:
        """Base URL of the server, ``http://host:port``."""
        return self.endpoint.url

    @property
    def running(self) -> bool:
        """Whether our child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def login_enabled(self) -> bool:
        """Login is required exactly when the server is reachable from other machines."""
        return not self.endpoint.is_loopback

    def start(self, timeout: float = 30.0) -> None:
        """Start the child and wait until it answers as visdom; raise VisdomServerError otherwise."""
        if self.running:
            return
        env = self._child_env()  # refuses a non-loopback host without credentials
        self._refuse_taken_port()
        try:
            self._static_dir = served_static_dir()  # a blank page is no server: refuse early
        except ProvisionError as err:
            raise VisdomServerError(str(err)) from None
        if self.log_path is None:
            self.log_path = Path(tempfile.mkdtemp(prefix="visdom-server-")) / "visdom.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log.info("starting visdom at %s (log: %s)", self.url, self.log_path)
        with self.log_path.open("wb") as log_file:
            # Own process group: a Ctrl-C in the terminal reaches only us, and stop() decides.
            self._proc = subprocess.Popen(
                self._child_command(),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=env,
                process_group=0,
            )
        self._wait_until_up(timeout)
        log.info("visdom answers at %s (pid %d)", self.url, self._proc.pid)

    def stop(self) -> None:
        """Stop the child (SIGTERM to its process group, SIGKILL after a grace period). Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        log.info("stopping visdom at %s (pid %d)", self.url, proc.pid)
        self._signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            log.warning("visdom (pid %d) ignored SIGTERM; killing it", proc.pid)
            self._signal_group(proc, signal.SIGKILL)
            proc.wait()

    def __enter__(self) -> VisdomServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _refuse_taken_port(self) -> None:
        if visdom_answers(self.endpoint):
            raise VisdomServerError(
                f"a visdom server already answers at {self.url}; use it (ensure_server does) or pick another port"
            )
        if _port_open(self.endpoint):
            raise VisdomServerError(
                f"port {self.endpoint.port} on {self.endpoint.host} is held by something that is not visdom; "
                "stop that program or choose another port"
            )

    def _child_command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "visualizer.server",
            "--child",
            "--parent-pid",
            str(os.getpid()),
        ]
        cmd += ["--host", self.endpoint.host, "--port", str(self.endpoint.port)]
        if self.env_path is not None:
            cmd += ["--env-path", str(self.env_path)]
        if self._static_dir is not None:
            cmd += ["--static-dir", str(self._static_dir)]
        if self.login_enabled:
            cmd.append("--login")
        return cmd

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"  # visdom print()s; without this its log is empty until exit
        # The child runs `-m visualizer.server`: make this very source tree importable there.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH")) if p
        )
        if self.login_enabled:
            env.update(_login_env(self.endpoint))
        return env

    def _wait_until_up(self, timeout: float) -> None:
        assert self._proc is not None and self.log_path is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise VisdomServerError(
                    f"visdom server for {self.url} exited with status {code} while starting; "
                    f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
                )
            if visdom_answers(self.endpoint, timeout=POLL_INTERVAL_S * 5):
                return
            time.sleep(POLL_INTERVAL_S)
        self.stop()
        raise VisdomServerError(
            f"visdom server for {self.url} did not answer within {timeout:.0f}s; "
            f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
        )

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(proc.pid, sig)


def _login_env(endpoint: VisdomEndpoint) -> dict[str, str]:
    """Environment that makes visdom's ``-enable_login`` take the endpoint's login from env vars."""
    if not (endpoint.username and endpoint.password):
        raise VisdomServerError(
            f"refusing to start visdom on non-loopback host {endpoint.host!r} without login: "
            f"set {USERNAME_VAR} and {PASSWORD_VAR} (clients then pass them as "
            "visdom.Visdom(username=..., password=...)), or bind 127.0.0.1"
        )
    env = {
        "VISDOM_USE_ENV_CREDENTIALS": "1",
        USERNAME_VAR: endpoint.username,
        PASSWORD_VAR: endpoint.password,
    }
    # visdom keeps its cookie secret in ~/.visdom/ whatever -env_path says, and
    # exits when neither that file nor VISDOM_COOKIE exists.
    cookie_dir = Path.home() / ".visdom"
    cookie_dir.mkdir(parents=True, exist_ok=True)
    if not (cookie_dir / "COOKIE_SECRET").is_file() and not os.environ.get("VISDOM_COOKIE"):
        env["VISDOM_COOKIE"] = secrets.token_urlsafe(32)
    return env


class _PageAssets(HTMLParser):
    """Collects what a page loads: each ``<script src>`` and ``<link href>``."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(str(found["src"]))
        elif tag == "link" and found.get("href"):
            self.urls.append(str(found["href"]))


def page_asset_failures(endpoint: VisdomEndpoint, timeout: float = 10.0) -> list[str]:
    """What visdom's page at ``/`` loads but the server does not serve: ``path (status)`` each.

    Every ``<script src>`` and ``<link href>`` (stylesheets, the icon) of the
    page is fetched; files on other sites are skipped. An empty list means the
    page can render.
    """
    try:
        status, _, body = _http(endpoint, "GET", "/", None, timeout)
    except (OSError, http.client.HTTPException) as err:
        return [f"/ ({err})"]
    if status != 200:
        return [f"/ (HTTP {status})"]
    parser = _PageAssets()
    parser.feed(body.decode("utf-8", errors="replace"))
    failures = []
    for url in parser.urls:
        parts = urlsplit(urljoin(f"{endpoint.url}/", url))
        if parts.netloc and parts.netloc != urlsplit(endpoint.url).netloc:
            continue  # another site's file: not this server's to serve
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            status, _, _ = _http(endpoint, "GET", path, None, timeout)
        except (OSError, http.client.HTTPException) as err:
            failures.append(f"{parts.path} ({err})")
            continue
        if status != 200:
            failures.append(f"{parts.path} (HTTP {status})")
    return failures


def ensure_server(
    endpoint: VisdomEndpoint,
    *,
    start: bool = True,
    env_path: Path | None = None,
) -> VisdomServer | None:
    """Make sure a visdom server answers at ``endpoint``.

    Returns None when one already answers; otherwise starts one (stopped at
    interpreter exit) and returns it. With ``start=False`` raises
    VisdomServerError explaining how to start one instead.
    """
    if visdom_answers(endpoint):
        log.info("using the visdom server already answering at %s", endpoint.url)
        return None
    if not start:
        raise VisdomServerError(
            f"no visdom server answers at {endpoint.url}; start one with "
            f"`python -m visualizer.server --host {endpoint.host} --port {endpoint.port}` "
            "(offline-safe, unlike `python -m visdom.server`), or allow this program to start it"
        )
    server = VisdomServer(endpoint, env_path=env_path)
    server.start()
    atexit.register(server.stop)
    return server


def _run_foreground(args: argparse.Namespace) -> None:
    """Serve until interrupted, for people who want a server outside any training run."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    env_path = Path(args.env_path) if args.env_path else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with VisdomServer(args.endpoint, env_path=env_path) as server:
        log.info("visdom is serving at %s; Ctrl-C stops it", server.url)
        try:
            while server.running and not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: serve visdom in the foreground (or, internally, be the child)."""
    parser = argparse.ArgumentParser(
        prog="python -m visualizer.server", description="Run an offline-safe visdom server."
    )
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to bind (default %(default)s)"
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s)")
    parser.add_argument(
        "--env-path",
        default=None,
        metavar="DIR",
        help="where visdom keeps envs (default ~/.visdom)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--parent-pid", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--login", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--static-dir", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.endpoint = VisdomEndpoint.parse(args.host, args.port)
    except ValueError as err:
        parser.error(f"argument --host: {err}")
    try:
        if args.child:
            run_child(args)
        else:
            _run_foreground(args)
    except VisdomServerError as exc:
        log.error("%s", exc)
        return ExitCode.UNAVAILABLE
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
