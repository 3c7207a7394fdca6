"""Start and stop a local visdom server that never downloads anything.

Stock ``python -m visdom.server`` first runs visdom's ``download_scripts()``,
which fetches JS/CSS from CDNs and breaks without internet. Here the child
process calls ``visdom.server.run_server.main()`` directly (no download step);
the assets come from ``scripts/provision_visdom_assets.py`` at install time, or,
when they are missing there, from a copy of visdom's static dir that
:func:`visualizer.server.assets.served_static_dir` completes in the user's cache.
:mod:`visualizer.server.probes` tells whether visdom answers, and serves what its page loads.

Foreground use: ``python -m visualizer.server [--host H] [--port P] [--env-path DIR]``
(:mod:`visualizer.server.__main__`, also the child's entry).
Where the server listens, and its login, is a :class:`~visualizer.server.endpoint.VisdomEndpoint`.

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
* The child patches visdom before it starts (:mod:`visualizer.server.child`): tornado's
  debug mode off, the index page served on tornado >= 6.6, a page's echo of our
  window closes dropped.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from visualizer.userdirs import user_state_dir

from .assets import ProvisionError, served_static_dir
from .endpoint import PASSWORD_VAR, USERNAME_VAR, VisdomEndpoint
from .probes import owning_visualizer, port_open, visdom_answers

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 30
STOP_GRACE_S = 5.0
POLL_INTERVAL_S = 0.1
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


class VisdomServerError(RuntimeError):
    """A visdom server could not be started, or none answers where one is required."""


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
    and password; without them :meth:`start` refuses. ``owned``: a server this
    process starts for itself (not to share): its answers name this process
    (:func:`~visualizer.server.probes.owning_visualizer`).
    """

    def __init__(
        self,
        endpoint: VisdomEndpoint | None = None,
        env_path: Path | None = None,
        log_path: Path | None = None,
        owned: bool = False,
    ) -> None:
        self.endpoint = endpoint if endpoint is not None else VisdomEndpoint()
        self.env_path = Path(env_path) if env_path is not None else None
        self.log_path = Path(log_path) if log_path is not None else None
        self.owned = owned
        self._proc: subprocess.Popen[bytes] | None = None
        self._static_dir: Path | None = None

    @property
    def url(self) -> str:
        """Base URL of the server, ``http://host:port``."""
        return self.endpoint.url

    @property
    def pid(self) -> int | None:
        """The server's process id while it was started here and not stopped."""
        return self._proc.pid if self._proc is not None else None

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
            # One log per port in the user's state directory, rewritten at each start:
            # bounded, and where a person looks after a crash (not a new /tmp folder each time).
            self.log_path = user_state_dir() / "visdom" / f"visdom-{self.endpoint.port}.log"
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
        if port_open(self.endpoint):
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
        if self.owned:
            cmd.append("--owned")
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


def ensure_server(
    endpoint: VisdomEndpoint,
    *,
    start: bool = True,
    env_path: Path | None = None,
) -> VisdomServer | None:
    """Make sure a visdom server answers at ``endpoint``.

    Returns None when one already answers; otherwise starts one (stopped at
    interpreter exit) and returns it. With ``start=False`` raises
    VisdomServerError explaining how to start one instead. With ``start=True``
    a visdom another visualizer started for itself is refused: it stops when that
    visualizer exits, and would leave this one drawing into nothing.
    """
    if visdom_answers(endpoint):
        owner = owning_visualizer(endpoint) if start else None
        if owner is not None:
            raise VisdomServerError(
                f"port {endpoint.port} is served by the visdom of another visualizer "
                f"(pid {owner}), which stops it when it exits: give this one another port "
                "(--port N), or share that visdom on purpose with --no-start-server"
            )
        log.info("using the visdom server already answering at %s", endpoint.url)
        return None
    if not start:
        raise VisdomServerError(
            f"no visdom server answers at {endpoint.url}; start one with "
            f"`python -m visualizer.server --host {endpoint.host} --port {endpoint.port}` "
            "(offline-safe, unlike `python -m visdom.server`), or allow this program to start it"
        )
    server = VisdomServer(endpoint, env_path=env_path, owned=True)
    server.start()
    atexit.register(server.stop)
    return server
