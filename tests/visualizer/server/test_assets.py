"""visdom's JS/CSS files: checked before the URL is printed, fetched into a cache when missing.

A visdom installed without them (a plain ``pip install '.[visualizer]'``) is
stood in for by a copy of the installed visdom package without its asset files,
put first on ``PYTHONPATH`` of the visualizer's process: visdom finds its static
dir next to the package it imports. The real install is never changed.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port, serving
from tests.fixtures.servers.npm import sri
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, plot_of
from tests.fixtures.servers.processes import first_line, reap
from tests.fixtures.servers.waiting import wait_until
from visualizer.server.assets import ASSETS, missing_assets
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import page_asset_failures, visdom_answers
from visualizer.userdirs import CACHE_NAME

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 120  # provisioning from cached tarballs, then a server start: a bound, not a target
REPO_TARBALLS = ROOT / ".cache" / "npm-assets"  # filled by `make install`


def real_visdom() -> Path:
    spec = importlib.util.find_spec("visdom")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def bare_visdom(site: Path) -> Path:
    """A copy of the installed visdom package under ``site`` without its asset files."""
    package = real_visdom()
    drop = {package / "static" / a.target for a in ASSETS} | {package / "static" / "version.built"}

    def ignore(directory: str, names: list[str]) -> set[str]:
        return {n for n in names if Path(directory, n) in drop or n == "__pycache__"}

    shutil.copytree(package, site / "visdom", ignore=ignore)
    static = site / "visdom" / "static"
    assert (static / "index.html").is_file() and len(missing_assets(static)) == len(ASSETS)
    return static


def visualizer_env(site: Path, cache: Path, path: str) -> dict[str, str]:
    """Environment of a visualizer importing the bare visdom, with its own cache and PATH."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "XDG_CACHE_HOME": str(cache),
        "PATH": path,
    }


def make_store(store: Path) -> None:
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(60):  # enough points to be smoothed (plotwindow.SPARSE_POINTS)
            rec.log({"loss": 1.0 / (step + 1)}, step=step)


@pytest.mark.integration
def test_missing_assets_offline_without_npm_fail_before_any_server(tmp_path):
    """No registry to reach and no npm: one error naming the URL and the cache, and the fix."""
    site, store, port = tmp_path / "site", tmp_path / "r" / "pickle", free_port()
    static = bare_visdom(site)
    make_store(store)
    no_npm = tmp_path / "empty-bin"  # a PATH on which npm is not found
    no_npm.mkdir()
    offline = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    env = {**visualizer_env(site, tmp_path / "cache", str(no_npm)), "npm_config_registry": offline}
    result = subprocess.run(
        [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(store),
         "--port", str(port), "--once"],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )  # fmt: skip
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert "visdom: " not in result.stdout
    errors = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, result.stderr
    tarballs = tmp_path / "cache" / CACHE_NAME / "npm-assets"
    assert str(static) in errors[0] and f"can not reach {offline}jquery/3.1.1 (" in errors[0]
    assert f"put the package's tarball at {tarballs / 'jquery-3.1.1.tgz'}" in errors[0]
    assert (
        f"with network access to {offline}, run `{sys.executable} -m visualizer.server.assets`"
        in (errors[0])
    )
    assert "Traceback" not in result.stderr
    assert not visdom_answers(VisdomEndpoint(port=port))
    assert missing_assets(real_visdom() / "static") == []  # the real install is untouched


@pytest.mark.integration
@pytest.mark.skipif(
    not REPO_TARBALLS.is_dir(), reason=f"no npm tarballs in {REPO_TARBALLS}: run `make install`"
)
@pytest.mark.parametrize("source", ["cache", "registry"])
def test_missing_assets_are_provisioned_without_npm(source, tmp_path, request, chromium_driver):
    """No npm on PATH. ``cache``: the tarballs are cached already (no network); ``registry``:
    an empty cache, each tarball fetched from the (loopback) registry and verified.
    Either way the page renders from the copy in the user's cache."""
    site, cache, store = tmp_path / "site", tmp_path / "cache", tmp_path / source / "pickle"
    tarballs = cache / CACHE_NAME / "npm-assets"
    if source == "cache":
        shutil.copytree(REPO_TARBALLS, tarballs)
    else:
        registry = request.getfixturevalue("registry")  # sets npm_config_registry
        for tarball in REPO_TARBALLS.glob("*.tgz"):  # it publishes the real files
            name, version = tarball.name.removesuffix(".tgz").rsplit("-", 1)
            registry.packages[f"{name}@{version}"] = (
                tarball.read_bytes(),
                sri(tarball.read_bytes()),
            )
    bare_visdom(site)
    make_store(store)
    no_npm = tmp_path / "empty-bin"
    no_npm.mkdir()
    log = tmp_path / "visualizer.log"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(store),
             "--port", str(free_port())],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
            env=visualizer_env(site, cache, str(no_npm)),
        )  # fmt: skip
    try:
        url = first_line(proc, log).strip().removeprefix("visdom: ")
        assert url.endswith(f"/env/{source}"), log.read_text()
        copies = list((cache / CACHE_NAME).glob("visdom-*-static"))
        assert len(copies) == 1 and missing_assets(copies[0]) == []
        cached = {p.name for p in tarballs.glob("*.tgz")}
        assert cached == {t.name for t in REPO_TARBALLS.glob("*.tgz")}
        if source == "registry":
            assert len(registry.requests) == 2 * len(cached)  # a document and a tarball each
        chromium_driver.get(url)
        plot = WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
            lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2 and p
        )
        assert plot["points"] == [60, 60] and plot["smoothed"] == [False, True]  # raw, smoothed
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert chromium_driver.save_screenshot(str(ARTIFACTS / f"visualizer_{source}_assets.png"))
        severe = [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=TIMEOUT) == ExitCode.OK, log.read_text()
    finally:
        reap(proc)
    assert "missing from" in log.read_text() and missing_assets(real_visdom() / "static") == []


@pytest.mark.integration
def test_a_running_visdom_without_its_files_is_refused_before_the_url(tmp_path):
    """A visdom already running but serving a blank page: UNAVAILABLE, the fix, and no URL."""
    static, store, port = bare_visdom(tmp_path / "site"), tmp_path / "r" / "pickle", free_port()
    make_store(store)
    # visualizer.server's child process, serving the bare static dir: such a visdom,
    # started by hand from an install without the files.
    server = subprocess.Popen(
        [sys.executable, "-m", "visualizer.server", "--child", "--parent-pid", str(os.getpid()),
         "--port", str(port), "--env-path", str(tmp_path / "envs"), "--static-dir", str(static)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        endpoint = VisdomEndpoint(port=port)
        wait_until(lambda: visdom_answers(endpoint), timeout=TIMEOUT)
        result = subprocess.run(
            [sys.executable, "run_visualizer_local.py", "--pickle-dir", str(store),
             "--port", str(port), "--once"],
            cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
    finally:
        server.kill()
        server.wait()
    assert result.returncode == ExitCode.UNAVAILABLE, result.stderr
    assert "visdom: " not in result.stdout
    errors = [line for line in result.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "/static/js/jquery.min.js (HTTP 404)" in errors[0], errors
    assert "the page would be blank" in errors[0] and "-m visualizer.server.assets" in errors[0]


def test_the_session_server_serves_everything_its_page_loads(visdom_server):
    assert page_asset_failures(visdom_server.endpoint) == []


@contextmanager
def static_site(root: Path) -> Iterator[VisdomEndpoint]:
    """A plain HTTP server for the files under ``root``."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    with serving(handler) as server:
        yield VisdomEndpoint("127.0.0.1", server.server_address[1])


def test_a_page_whose_scripts_or_styles_are_missing_is_reported(tmp_path):
    (tmp_path / "css").mkdir()
    (tmp_path / "css" / "here.css").write_text("body {}")
    (tmp_path / "favicon.png").write_bytes(b"\x89PNG")
    (tmp_path / "index.html").write_text(
        "<html><head><link rel='shortcut icon' href='favicon.png'>"
        "<link rel=stylesheet href='/css/here.css?v=1'><link rel=stylesheet href=css/gone.css>"
        "<script src='/js/gone.js'></script><script>inline()</script>"
        "<script src='http://cdn.example/x.js'></script></head></html>"
    )
    with static_site(tmp_path) as endpoint:
        assert page_asset_failures(endpoint) == [
            "/css/gone.css (HTTP 404)",
            "/js/gone.js (HTTP 404)",
        ]
