"""The README's laptop install route, run as a new user runs it, renders the run's plots.

Each case copies the repository's files (``git ls-files``: setuptools writes
``build/`` and ``*.egg-info`` next to the sources it builds), makes a fresh
virtual environment with this interpreter's ``-m venv`` (so the pip that Python
bundles), for the second case upgrades pip to the newest release, and runs the
README's install command itself, read from README.md, with no pip cache (a
cached visdom wheel would hide a failing sdist build). The visualizer is then
started as the README says, with an empty user cache and no ``npm`` on ``PATH``
(a laptop without Node.js), so visdom's JS/CSS files really come from the npm
registry over HTTPS (Python's standard library), and its printed URL is opened in
headless Chromium. Needs network access to PyPI and the npm registry; deselect
with ``-m "not install"``.
"""

from __future__ import annotations

import ensurepip
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from run_core.exit_codes import ExitCode
from snapshot_store import Recorder
from tests.fixtures.servers.net import free_port
from tests.fixtures.servers.pages import ARTIFACTS, BROWSER_WAIT_S, plot_of
from tests.fixtures.servers.processes import first_line, reap
from visualizer.server.assets import ASSETS, missing_assets
from visualizer.server.endpoint import VisdomEndpoint
from visualizer.server.probes import visdom_answers
from visualizer.userdirs import CACHE_NAME

pytestmark = [pytest.mark.integration, pytest.mark.install]

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
# Bounds, not targets: a pip upgrade, a full install with visdom's sdist build,
# fetching visdom's files from npm then starting its server, the visualizer's exit.
PIP_UPGRADE_TIMEOUT_S = 180
INSTALL_TIMEOUT_S = 420
START_TIMEOUT_S = 300
EXIT_TIMEOUT_S = 60
STEPS = 60  # enough points to be smoothed (plotwindow.SPARSE_POINTS)


def readme_laptop_commands() -> list[str]:
    """The README's laptop install block, one command a line (continuations joined)."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    block = next(b for b in blocks if "pip install '.[visualizer]'" in b)
    commands = block.replace("\\\n", " ").splitlines()
    assert len(commands) == 3 and commands[0].startswith("python3 -m venv venv"), commands
    return commands


def copy_sources(dest: Path) -> Path:
    """The repository's files (tracked, and new ones git does not ignore) copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    for name in filter(None, listed.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is listed too
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def path_without_node(shims: Path) -> str:
    """This PATH with npm, npx and node taken out: each directory holding one of them is
    replaced by ``shims/<n>``, links to everything else in it."""
    node = {"npm", "npx", "node", "nodejs"}
    dirs = []
    for n, directory in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        here = Path(directory)
        if not here.is_dir() or not any((here / name).exists() for name in node):
            dirs.append(directory)
            continue
        shim = shims / str(n)
        shim.mkdir(parents=True)
        for entry in here.iterdir():
            if entry.name not in node:
                (shim / entry.name).symlink_to(entry)
        dirs.append(str(shim))
    path = os.pathsep.join(dirs)
    assert shutil.which("npm", path=path) is None and shutil.which("bash", path=path)
    return path


def user_env(venv: Path, src: Path, cache: Path) -> dict[str, str]:
    """A shell in ``src`` with ``venv`` activated, no pip cache, empty user caches, no npm."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{path_without_node(cache / 'no-node-bin')}",
        VIRTUAL_ENV=str(venv),
        PWD=str(src),
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        XDG_CACHE_HOME=str(cache),
    )
    return env


def run(command: list[str], env: dict[str, str], timeout: float) -> str:
    """Run ``command`` in the copy; its stdout, or a failure showing both streams' tails."""
    started = time.monotonic()
    result = subprocess.run(
        command, cwd=env["PWD"], env=env, capture_output=True, text=True, timeout=timeout
    )
    log.info("%.1fs: %s", time.monotonic() - started, shlex.join(command))
    assert result.returncode == 0, (
        f"{shlex.join(command)} exited {result.returncode}\n"
        f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result.stdout


def installed(env: dict[str, str]) -> dict[str, str]:
    """Distribution name -> version installed in the activated venv."""
    listing = run(["python", "-m", "pip", "list", "--format=json"], env, PIP_UPGRADE_TIMEOUT_S)
    return {d["name"].lower(): d["version"] for d in json.loads(listing)}


@pytest.mark.timeout(PIP_UPGRADE_TIMEOUT_S + INSTALL_TIMEOUT_S + START_TIMEOUT_S + 180)
@pytest.mark.parametrize("pip", ["bundled pip", "newest pip"])
def test_the_readme_install_renders_the_runs_plots(pip, tmp_path, chromium_driver, run_name):
    _, install, start = readme_laptop_commands()
    src, cache = copy_sources(tmp_path / "src"), tmp_path / "cache"
    venv = src / "venv"
    env = user_env(venv, src, cache)
    run([sys.executable, "-m", "venv", str(venv)], env, PIP_UPGRADE_TIMEOUT_S)
    if pip == "newest pip":
        run(["python", "-m", "pip", "install", "-U", "pip"], env, PIP_UPGRADE_TIMEOUT_S)
    else:
        assert installed(env)["pip"] == ensurepip.version()
    run(["bash", "-c", install], env, INSTALL_TIMEOUT_S)
    versions = installed(env)
    log.info("pip %s, visdom %s", versions["pip"], versions["visdom"])
    assert "torch" not in versions, "the visualizer extra must not pull torch"
    (own_static,) = venv.glob("lib/python*/site-packages/visdom/static")
    assert missing_assets(own_static), "pip installed visdom's files: nothing to provision"

    store = tmp_path / run_name / "pickle"
    with Recorder(store, flush_interval=0.05) as rec:
        for step in range(STEPS):
            rec.log({"loss": 1.0 / (step + 1)}, step=step)
    port = free_port()
    command = [str(store) if arg == "DIR" else arg for arg in shlex.split(start)]
    stderr_log = tmp_path / "visualizer.log"
    with stderr_log.open("w") as stderr:
        proc = subprocess.Popen(
            [*command, "--port", str(port)], cwd=src, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        url = first_line(proc, stderr_log, timeout=START_TIMEOUT_S).strip()
        assert url == f"visdom: http://127.0.0.1:{port}/env/{run_name}", stderr_log.read_text()
        assert "fetching them from the npm registry (https://registry.npmjs.org/)" in (
            stderr_log.read_text()
        )
        (static,) = (cache / CACHE_NAME).glob("visdom-*-static")
        assert missing_assets(static) == []
        tarballs = list((cache / CACHE_NAME / "npm-assets").glob("*.tgz"))
        assert len(tarballs) == len({a.spec for a in ASSETS})

        chromium_driver.get(url.removeprefix("visdom: "))
        plot = WebDriverWait(chromium_driver, BROWSER_WAIT_S).until(
            lambda d: (p := plot_of(d, "train losses")) and p["drawn"] == 2 and p
        )
        assert plot["names"] == ["loss", "loss"] and plot["smoothed"] == [False, True]
        assert plot["points"] == [STEPS, STEPS]
        assert plot["x_last"][0] == STEPS - 1 and plot["y_last"][0] == pytest.approx(1 / STEPS)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / f"visualizer_install_{pip.replace(' ', '_')}.png"
        assert chromium_driver.save_screenshot(str(shot))
        severe = [e for e in chromium_driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == []

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=EXIT_TIMEOUT_S) == ExitCode.OK, stderr_log.read_text()
    finally:
        reap(proc)
    assert not visdom_answers(VisdomEndpoint(port=port)), "visdom outlived the visualizer"
