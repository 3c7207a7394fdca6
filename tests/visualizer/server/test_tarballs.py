"""npm tarballs over HTTPS without npm: a loopback registry stands in for registry.npmjs.org.

The registry here is a plain HTTP server in a thread of the test, answering the
two requests npm's registry answers (a version's document, then its tarball);
the visualizer is pointed at it as npm would be, with ``npm_config_registry``.
The real registry is exercised by ``make install`` (scripts/provision_visdom_assets.py)
and by tests/e2e/test_install.py.
"""

from __future__ import annotations

import io
import logging
import tarfile
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.npm import Registry, Zeros, sri
from visualizer.server.assets import read_members
from visualizer.server.tarballs import OfflineError, ProvisionError, fetch_tarball

MIB = 1 << 20
CAP = 64 * MIB  # the most a tarball may be (docs/viewer.md): mathjax's, the largest, is 21 MB
HELD = 8 * MIB  # what a download may hold in memory: a few chunks, not the body


@contextmanager
def peak_memory() -> Iterator[Callable[[], int]]:
    """The most Python memory held at once in the block (every thread's), read after it."""
    peak = [0]
    tracemalloc.start()
    try:
        yield lambda: peak[0]
    finally:
        peak[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def npm_tarball(files: dict[str, bytes]) -> bytes:
    """A package tarball as npm publishes it: every file under ``package/``."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def published_lib(registry: Registry) -> bytes:
    """``lib@1.2.3``, a small package the registry publishes with its integrity."""
    data = npm_tarball({"dist/lib.min.js": b"window.lib = 1;"})
    registry.packages["lib@1.2.3"] = (data, sri(data))
    return data


@pytest.fixture
def no_npm(tmp_path, monkeypatch) -> None:
    """A PATH on which ``npm`` is not found."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_a_tarball_is_fetched_verified_and_cached_without_npm(tmp_path, registry, no_npm):
    data = published_lib(registry)
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


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-content-length"])
def test_a_body_past_the_cap_is_refused_and_never_held(tmp_path, registry, no_npm, declared):
    """With a Content-Length it is refused before its body is read; without one, at the cap."""
    registry.packages["big@1.0.0"] = (Zeros(CAP + MIB, declared), sri(b""))
    with peak_memory() as peak, pytest.raises(ProvisionError) as caught:
        fetch_tarball("big@1.0.0", tmp_path / "cache")
    assert str(caught.value) == (
        f"{registry.url}big/-/big-1.0.0.tgz sends more than 64 MiB, the most taken from it: "
        "refused, nothing cached"
    )
    assert list((tmp_path / "cache").iterdir()) == []
    assert peak() < HELD


def test_a_large_tarball_is_streamed_to_disk_and_verified_as_it_comes(tmp_path, registry, no_npm):
    body = Zeros(CAP // 2)
    registry.packages["big@1.0.0"] = (body, sri(body))
    with peak_memory() as peak:
        cached = fetch_tarball("big@1.0.0", tmp_path / "cache")
    assert cached.stat().st_size == body.size
    assert peak() < HELD


def changed(data: bytes, how: str) -> bytes:
    """``data`` truncated, or with one byte changed."""
    return data[: len(data) // 2] if how == "truncated" else data[:-1] + bytes([data[-1] ^ 1])


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("how", ["truncated", "tampered"])
def test_a_cached_tarball_that_changed_is_fetched_again(tmp_path, registry, no_npm, caplog, how):
    data = published_lib(registry)
    cached = fetch_tarball("lib@1.2.3", tmp_path / "cache")
    cached.write_bytes(changed(data, how))
    assert fetch_tarball("lib@1.2.3", tmp_path / "cache") == cached
    assert cached.read_bytes() == data and len(registry.requests) == 4
    [line] = warnings(caplog)
    assert line.startswith(f"cached {cached} does not match the integrity recorded when it was ")
    assert line.endswith(": fetching it again")


def test_a_changed_cached_tarball_is_refused_offline(tmp_path, registry, no_npm, monkeypatch):
    data = published_lib(registry)
    cached = fetch_tarball("lib@1.2.3", tmp_path / "cache")
    cached.write_bytes(changed(data, "tampered"))
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(OfflineError, match=f"put the package's tarball at {cached}"):
        fetch_tarball("lib@1.2.3", tmp_path / "cache")
    assert not cached.exists()


def test_a_tarball_put_by_hand_is_checked_against_the_published_integrity(
    tmp_path, registry, no_npm, caplog
):
    data = published_lib(registry)
    cached = tmp_path / "cache" / "lib-1.2.3.tgz"
    cached.parent.mkdir()
    cached.write_bytes(changed(data, "tampered"))
    assert fetch_tarball("lib@1.2.3", tmp_path / "cache").read_bytes() == data
    [line] = warnings(caplog)
    assert line.startswith(f"cached {cached} does not match the registry's integrity (sha512-")
    assert fetch_tarball("lib@1.2.3", tmp_path / "cache") == cached  # checked, now recorded
    assert registry.requests == ["/lib/1.2.3", "/lib/1.2.3", "/lib/-/lib-1.2.3.tgz"]


def test_a_tarball_put_by_hand_is_used_unchecked_offline(tmp_path, monkeypatch, no_npm, caplog):
    unreachable = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("npm_config_registry", unreachable)
    data = npm_tarball({"dist/lib.min.js": b"window.lib = 1;"})
    cached = tmp_path / "cache" / "lib-1.2.3.tgz"
    cached.parent.mkdir()
    cached.write_bytes(data)
    assert fetch_tarball("lib@1.2.3", tmp_path / "cache").read_bytes() == data
    assert warnings(caplog) == [
        f"cached {cached} has no recorded integrity and can not be checked "
        f"({unreachable}/lib/1.2.3 can not be reached): used unchecked"
    ]
