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

A download is streamed to disk, hashed as it comes, and never held whole in
memory; a body past :data:`MAX_TARBALL_BYTES` is refused (the registry publishes
no tarball size: ``dist.unpackedSize`` is the unpacked files', not the archive's).
The digest a tarball was checked against is recorded beside it
(``<tarball>.integrity``) and checked again each time the cached tarball is used:
a changed one (tampered, truncated) is deleted and fetched again. One put in the
cache by hand has no record: it is checked against the registry's integrity, or,
when the registry can not be reached, used unchecked with a warning.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import logging
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Generator
from contextlib import closing
from pathlib import Path
from typing import Any

log = logging.getLogger("visualizer.server.assets")

DEFAULT_REGISTRY = "https://registry.npmjs.org/"
HTTP_TIMEOUT_S = 60
NPM_TIMEOUT_S = 300
_CHUNK = 1 << 20
# visdom's largest package, mathjax 2.7.5, is a 21 MB tarball: room to spare, and a bound.
MAX_TARBALL_BYTES = 64 << 20
_MAX_DOCUMENT_BYTES = 4 << 20  # a version's document is a few KB
RECORD_SUFFIX = ".integrity"
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
    if cached.is_file() and _intact(package, version, cached):
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


def _intact(package: str, version: str, cached: Path) -> bool:
    """Whether the cached tarball has the digest recorded beside it, else the registry's.

    One that does not is deleted (with its record), to be fetched again.
    """
    expected, whose = _recorded(cached), "the integrity recorded when it was fetched"
    unrecorded = expected is None
    if expected is None:
        try:
            expected, whose = published(package, version, cached)[1], "the registry's integrity"
        except ProvisionError as err:
            # Put there by hand because the registry can not give it (offline, a mirror without it).
            offline = isinstance(err, OfflineError)
            why = f"{metadata_url(package, version)} can not be reached" if offline else str(err)
            log.warning(
                "cached %s has no recorded integrity and can not be checked (%s): used unchecked",
                cached,
                why,
            )
            return True
    actual = _file_digest(cached, expected[0])
    if actual == expected[1]:
        if unrecorded:
            record(cached, expected)
        return True
    log.warning(
        "cached %s does not match %s (%s, got %s): fetching it again",
        cached,
        whose,
        sri(expected),
        sri((expected[0], actual)),
    )
    cached.unlink(missing_ok=True)
    _record_path(cached).unlink(missing_ok=True)
    return False


def published(package: str, version: str, cached: Path) -> tuple[str, tuple[str, bytes]]:
    """The tarball's URL, and the (algorithm, digest) the registry publishes for it."""
    url = metadata_url(package, version)
    with closing(_chunks(url, cached, "application/json", _MAX_DOCUMENT_BYTES)) as chunks:
        body = b"".join(chunks)
    try:
        document = json.loads(body)
    except ValueError:
        raise ProvisionError(f"{url} is not a JSON document") from None
    dist = document.get("dist") if isinstance(document, dict) else None
    if not isinstance(dist, dict) or not isinstance(dist.get("tarball"), str):
        raise ProvisionError(f"{url} does not name a tarball (no dist.tarball)")
    return dist["tarball"], expected_digest(dist, url)


def download(package: str, version: str, cached: Path) -> Path:
    """Download ``package@version``'s tarball to ``cached`` once its digest matches the registry's."""
    url, expected = published(package, version, cached)
    log.info("downloading %s", url)
    fd, name = tempfile.mkstemp(prefix=f".{cached.name}.", suffix=".tmp", dir=cached.parent)
    tmp = Path(name)
    try:
        digest = hashlib.new(expected[0])
        with (
            os.fdopen(fd, "wb") as f,
            closing(_chunks(url, cached, "application/octet-stream", MAX_TARBALL_BYTES)) as chunks,
        ):
            for chunk in chunks:
                f.write(chunk)
                digest.update(chunk)
        if digest.digest() != expected[1]:
            raise ProvisionError(
                f"{url} does not match the registry's integrity ({sri(expected)}, got "
                f"{sri((expected[0], digest.digest()))}): refused, nothing cached"
            )
        record(cached, expected)  # first: a tarball in the cache always has its record
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


def sri(expected: tuple[str, bytes]) -> str:
    """``algorithm-<base64 digest>``, as ``dist.integrity`` writes a digest."""
    algorithm, digest = expected
    return f"{algorithm}-{base64.b64encode(digest).decode()}"


def _record_path(cached: Path) -> Path:
    return cached.with_name(cached.name + RECORD_SUFFIX)


def record(cached: Path, expected: tuple[str, bytes]) -> None:
    """Keep beside ``cached`` the digest its content was checked against."""
    _record_path(cached).write_text(sri(expected) + "\n")


def _recorded(cached: Path) -> tuple[str, bytes] | None:
    """The digest recorded beside ``cached``; None when there is none (or it is unreadable)."""
    try:
        text = _record_path(cached).read_text()
        return expected_digest({"integrity": text}, str(_record_path(cached)))
    except (OSError, ValueError, ProvisionError):
        return None


def _file_digest(path: Path, algorithm: str) -> bytes:
    with path.open("rb") as f:
        return hashlib.file_digest(f, algorithm).digest()


def _chunks(url: str, cached: Path, accept: str, cap: int) -> Generator[bytes, None, None]:
    """The body at ``url``, :data:`_CHUNK` bytes at a time, refused past ``cap`` bytes.

    OfflineError (naming the URL and where to put the tarball) when ``url`` can not
    be reached. Close it (``contextlib.closing``) to end the request early.
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("https", "http"):
        raise ProvisionError(f"{url} is not an https:// URL")
    request = urllib.request.Request(url, headers={"Accept": accept})
    too_large = ProvisionError(
        f"{url} sends more than {cap >> 20} MiB, the most taken from it: refused, nothing cached"
    )
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
            declared = answer.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > cap:
                raise too_large  # refused before a byte of it is read
            size = 0
            while chunk := answer.read(_CHUNK):
                size += len(chunk)
                if size > cap:
                    raise too_large
                yield chunk
    except urllib.error.HTTPError as err:
        raise ProvisionError(f"{url} answered HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
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
        # npm checked it against the registry; the record lets later uses check it again.
        record(cached, ("sha512", _file_digest(packed, "sha512")))
        packed.replace(cached)
    return cached
