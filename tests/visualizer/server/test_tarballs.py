"""npm tarballs over HTTPS without npm: a loopback registry stands in for registry.npmjs.org.

The registry here is a plain HTTP server in a thread of the test, answering the
two requests npm's registry answers (a version's document, then its tarball);
the visualizer is pointed at it as npm would be, with ``npm_config_registry``.
The real registry is exercised by ``make install`` (scripts/provision_visdom_assets.py)
and by tests/e2e/test_install.py.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tests.fixtures.net import free_port
from tests.fixtures.npm import sri
from visualizer.server.assets import read_members
from visualizer.server.tarballs import OfflineError, ProvisionError, fetch_tarball


def npm_tarball(files: dict[str, bytes]) -> bytes:
    """A package tarball as npm publishes it: every file under ``package/``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def no_npm(tmp_path, monkeypatch) -> None:
    """A PATH on which ``npm`` is not found."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_a_tarball_is_fetched_verified_and_cached_without_npm(tmp_path, registry, no_npm):
    data = npm_tarball({"dist/lib.min.js": b"window.lib = 1;"})
    registry.packages["lib@1.2.3"] = (data, sri(data))
    cached = fetch_tarball("lib@1.2.3", tmp_path / "cache")
    assert cached == tmp_path / "cache" / "lib-1.2.3.tgz" and cached.read_bytes() == data
    assert read_members(cached, {"dist/lib.min.js"}) == {"dist/lib.min.js": b"window.lib = 1;"}
    assert registry.requests == ["/lib/1.2.3", "/lib/-/lib-1.2.3.tgz"]
    assert fetch_tarball("lib@1.2.3", tmp_path / "cache") == cached  # from the cache now
    assert len(registry.requests) == 2


def test_a_tarball_that_does_not_match_its_integrity_is_refused(tmp_path, registry, no_npm):
    published = npm_tarball({"dist/lib.min.js": b"window.lib = 1;"})
    tampered = npm_tarball({"dist/lib.min.js": b"window.lib = 'evil';"})
    registry.packages["lib@1.2.3"] = (tampered, sri(published))
    with pytest.raises(ProvisionError) as caught:
        fetch_tarball("lib@1.2.3", tmp_path / "cache")
    message = str(caught.value)
    assert f"{registry.url}lib/-/lib-1.2.3.tgz does not match the registry's integrity" in message
    assert sri(published) in message and sri(tampered) in message
    assert list((tmp_path / "cache").iterdir()) == []  # nothing cached, no temp file left


def test_a_package_the_registry_does_not_have_is_named(tmp_path, registry, no_npm):
    with pytest.raises(ProvisionError, match=r"/nosuch/0\.0\.1 answered HTTP 404"):
        fetch_tarball("nosuch@0.0.1", tmp_path / "cache")


def test_offline_names_the_url_and_where_to_put_the_tarball(tmp_path, monkeypatch, no_npm):
    unreachable = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("npm_config_registry", unreachable)
    cache = tmp_path / "a dir with spaces" / "cache"
    with pytest.raises(OfflineError) as caught:
        fetch_tarball("jquery@3.1.1", cache)
    message = str(caught.value)
    assert f"can not reach {unreachable}/jquery/3.1.1 (" in message
    assert f"put the package's tarball at {Path(cache, 'jquery-3.1.1.tgz')}" in message
