"""npm package tarballs, fetched over HTTPS with the standard library and checked against the registry.

For ``name@version`` the registry's document ``<registry>/<name>/<version>``
gives ``dist.tarball`` (the file's URL) and ``dist.integrity`` (an SRI string:
``sha512-<base64 digest>``); the tarball is downloaded next to its place in the
cache, its digest compared with the published one, and only then moved into
place: a tarball that does not match is refused, never cached.

The registry is npm's: ``https://registry.npmjs.org/``, or the one npm itself
is told to use through ``npm_config_registry`` (a company mirror). Proxies come
from ``HTTPS_PROXY``/``https_proxy`` as for every urllib request. When the
registry can not be reached, the ``npm`` command, if installed, is tried (its own
cache may hold the package); otherwise one error names the URL and the cache
path where the tarball may be put by hand.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

log = logging.getLogger("visualizer.server.assets")

DEFAULT_REGISTRY = "https://registry.npmjs.org/"
HTTP_TIMEOUT_S = 60
NPM_TIMEOUT_S = 300
CHUNK = 1 << 20
# Strongest first: an SRI string may list several digests; the strongest known one is checked.
_ALGORITHMS = ("sha512", "sha384", "sha256")


class ProvisionError(RuntimeError):
    """A package could not be fetched or does not contain what visdom needs."""


class OfflineError(ProvisionError):
    """The registry (or the tarball's host) could not be reached."""


def registry() -> str:
    """The npm registry's base URL, ending in ``/`` (``npm_config_registry`` as npm reads it)."""
    # npm reads its settings from lower-case npm_config_* variables (upper case works too).
    base = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")  # noqa: SIM112
    base = base or DEFAULT_REGISTRY
    return base if base.endswith("/") else base + "/"


def tarball_name(package: str, version: str) -> str:
    """The file name ``npm pack`` gives a package's tarball (scopes lose '@', '/' -> '-')."""
    return f"{package.lstrip('@').replace('/', '-')}-{version}.tgz"


def metadata_url(package: str, version: str) -> str:
    """Where the registry describes ``package@version`` (a scope's '/' escaped, as npm does)."""
    return f"{registry()}{package.replace('/', '%2f')}/{urllib.parse.quote(version)}"


def fetch_tarball(spec: str, cache_dir: Path) -> Path:
    """The cached tarball of ``spec`` (``name@version``); downloaded and verified when missing."""
    package, version = spec.rsplit("@", 1)
    cached = cache_dir / tarball_name(package, version)
    if cached.is_file():
        log.debug("cached: %s", cached)
        return cached
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ProvisionError(f"can not create the tarball cache {cache_dir}: {err}") from None
    try:
        return download(package, version, cached)
    except OfflineError as err:
        npm = shutil.which("npm")
        if npm is None:
            raise
        log.warning("%s; trying `npm pack %s` (npm's own cache may have it)", err, spec)
        try:
            return npm_pack(npm, spec, cached)
        except ProvisionError as npm_err:
            raise ProvisionError(f"{err}; {npm_err}") from None


def download(package: str, version: str, cached: Path) -> Path:
    """Download ``package@version``'s tarball to ``cached`` once its digest matches the registry's."""
    url = metadata_url(package, version)
    document = json.loads(_get(url, cached, "application/json"))
    dist = document.get("dist") if isinstance(document, dict) else None
    if not isinstance(dist, dict) or not isinstance(dist.get("tarball"), str):
        raise ProvisionError(f"{url} does not name a tarball (no dist.tarball)")
    expected = expected_digest(dist, url)
    log.info("downloading %s", dist["tarball"])
    data = _get(dist["tarball"], cached, "application/octet-stream")
    verify(data, expected, dist["tarball"])
    fd, name = tempfile.mkstemp(prefix=f".{cached.name}.", suffix=".tmp", dir=cached.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        tmp.replace(cached)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return cached


def expected_digest(dist: dict[str, Any], url: str) -> tuple[str, bytes]:
    """(algorithm, digest) the registry publishes for the tarball: SRI ``integrity``, else ``shasum``."""
    integrity = dist.get("integrity")
    if isinstance(integrity, str):
        found = dict(item.split("-", 1) for item in integrity.split() if "-" in item)
        for algorithm in _ALGORITHMS:
            if algorithm in found:
                try:
                    return algorithm, base64.b64decode(found[algorithm], validate=True)
                except ValueError:
                    break
    shasum = dist.get("shasum")
    if isinstance(shasum, str) and len(shasum) == 40:
        return "sha1", bytes.fromhex(shasum)
    raise ProvisionError(f"{url} publishes no usable digest of its tarball (dist.integrity)")


def verify(data: bytes, expected: tuple[str, bytes], url: str) -> None:
    """ProvisionError unless ``data`` has the published digest."""
    algorithm, digest = expected
    actual = hashlib.new(algorithm, data).digest()
    if actual != digest:
        raise ProvisionError(
            f"{url} does not match the registry's integrity ({algorithm}-"
            f"{base64.b64encode(digest).decode()}, got {algorithm}-"
            f"{base64.b64encode(actual).decode()}): refused, nothing cached"
        )


def _get(url: str, cached: Path, accept: str) -> bytes:
    """The body at ``url``; OfflineError (naming the URL and where to put the tarball) if unreachable."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "http"):
        raise ProvisionError(f"{url} is not an https:// URL")
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
            return bytes(answer.read())
    except urllib.error.HTTPError as err:
        raise ProvisionError(f"{url} answered HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise OfflineError(
            f"can not reach {url} ({reason}): connect to the network (or set npm_config_registry "
            f"to a mirror), or put the package's tarball at {cached}"
        ) from None


def npm_pack(npm: str, spec: str, cached: Path) -> Path:
    """``npm pack spec`` into ``cached``'s directory; ProvisionError when npm can not."""
    # Pack into a scratch dir and move into place so an interrupted run leaves no half tarball.
    with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".pack-") as scratch:
        try:
            proc = subprocess.run(
                [npm, "pack", "--loglevel=error", "--pack-destination", scratch, spec],
                capture_output=True,
                text=True,
                timeout=NPM_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProvisionError(f"npm pack {spec} timed out after {NPM_TIMEOUT_S}s") from None
        packed = Path(scratch) / cached.name
        if proc.returncode != 0 or not packed.is_file():
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise ProvisionError(
                f"npm could not fetch package {spec} either (exit {proc.returncode}): "
                + " | ".join(detail)
            )
        packed.replace(cached)
    return cached
