"""The JS/CSS/font files visdom 0.2.4 serves: check them, and install them from the npm registry.

Stock visdom (``python -m visdom.server``) downloads these files from unpkg.com,
cdn.plot.ly, d3js.org and cdnjs on first start (``visdom/server/build.py``,
``download_scripts``) and cannot serve a working page without internet. This
module fetches the same files as npm tarballs, over HTTPS from the npm registry
with Python's standard library, each checked against the integrity hash the
registry publishes (:mod:`visualizer.server.tarballs`; the ``npm`` command only as a
fallback, not needed), caches the tarballs so later runs need no network, and writes each file into a static
directory under the exact name ``download_scripts`` would have used.

Two users: ``make install`` (through ``scripts/provision_visdom_assets.py``, a
thin entry point with the repository's ``.cache/npm-assets/`` as tarball cache)
fills the installed visdom's own ``static/``; and :func:`served_static_dir`,
called before the visualizer starts a server, which leaves a complete visdom
alone and otherwise builds a complete copy of visdom's ``static/`` in the user's
cache (``$XDG_CACHE_HOME/remote-train-monitor/``, default ``~/.cache/...``) for
the server to use: a plain ``pip install '.[visualizer]'`` never runs the script,
and site-packages may not be writable.

Every URL in ``download_scripts`` maps to an npm package at the same version:

* unpkg.com URLs are npm packages by definition (``unpkg.com/<pkg>@<ver>/<path>``).
* ``cdn.plot.ly/plotly-2.11.1.min.js`` is ``plotly.js-dist-min@2.11.1``'s
  ``plotly.min.js`` (the same dist build plotly publishes to its CDN).
* ``d3js.org/d3.v3.min.js`` is the last 3.x release, ``d3@3.5.17``'s ``d3.min.js``.
* ``d3js.org/d3-selection-multi.v1.js`` is the last 1.x release,
  ``d3-selection-multi@1.0.1``'s ``build/d3-selection-multi.js``.
* ``cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.5/...`` is ``mathjax@2.7.5``.
* ``unpkg.com/classnames@2.2.5`` (no path) resolves to the package's ``main``,
  ``index.js``; visdom stores it as ``fonts/classnames`` (no extension, so its
  sorting puts it under fonts/). Nothing loads it; it is provisioned for parity.

Nothing visdom 0.2.4 downloads is missing from npm. One visdom quirk is kept and
fixed at the same time: it saves the Glyphicons SVG font under the literal name
``glyphicons-halflings-regular.svg#glyphicons_halflingsregular`` (the URL
fragment becomes part of the file name), while browsers request the name without
the fragment. We write both names.

Finally ``static/version.built`` is written with visdom's version, as
``download_scripts`` does, so that even stock ``python -m visdom.server`` finds
every file present and makes no network request.

Usage: ``python -m visualizer.server.assets [--cache-dir DIR] [--static-dir DIR] [-v]``
(or ``scripts/provision_visdom_assets.py``, same options). Exits non-zero with a
message naming the package, the URL and the cache path when it can not be fetched.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shutil
import sys
import tarfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from run_core.exit_codes import ExitCode
from visualizer.userdirs import user_cache_dir, write_if_changed

from .tarballs import ProvisionError, fetch_tarball, registry

MODULE = "visualizer.server.assets"  # run as `python -m` this module is __main__
log = logging.getLogger(MODULE)

MATHJAX = "js/mathjax/2.7.5"


@dataclass(frozen=True)
class Asset:
    """One file visdom serves: which npm package file it is and where visdom wants it."""

    package: str
    version: str
    member: str  # path inside the package (npm tarballs prefix it with "package/")
    target: str  # path relative to visdom's static/ dir, as download_scripts names it

    @property
    def spec(self) -> str:
        """``name@version``, as npm writes it."""
        return f"{self.package}@{self.version}"


def _bootstrap(member: str, target: str) -> Asset:
    return Asset("bootstrap", "3.3.7", f"dist/{member}", target)


def _mathjax(path: str) -> Asset:
    return Asset("mathjax", "2.7.5", path, f"{MATHJAX}/{path}")


_GLYPHS = "fonts/glyphicons-halflings-regular"

# Mirrors visdom 0.2.4 server/build.py download_scripts(), in its order.
ASSETS: tuple[Asset, ...] = (
    Asset("jquery", "3.1.1", "dist/jquery.min.js", "js/jquery.min.js"),
    _bootstrap("js/bootstrap.min.js", "js/bootstrap.min.js"),
    Asset("react", "16.2.0", "umd/react.production.min.js", "js/react-react.min.js"),
    Asset("react-dom", "16.2.0", "umd/react-dom.production.min.js", "js/react-dom.min.js"),
    Asset("react-modal", "3.1.10", "dist/react-modal.min.js", "js/react-modal.min.js"),
    Asset("plotly.js-dist-min", "2.11.1", "plotly.min.js", "js/plotly-plotly.min.js"),
    Asset("sjcl", "1.0.7", "sjcl.js", "js/sjcl.js"),
    Asset(
        "layout-bin-packer", "1.4.0", "dist/layout-bin-packer.js.map", "js/layout-bin-packer.js.map"
    ),
    Asset("d3", "3.5.17", "d3.min.js", "js/d3.v3.min.js"),
    Asset(
        "d3-selection-multi", "1.0.1", "build/d3-selection-multi.js", "js/d3-selection-multi.v1.js"
    ),
    Asset("save-svg-as-png", "1.4.17", "lib/saveSvgAsPng.js", "js/saveSvgAsPng.js"),
    Asset("react-resizable", "1.4.6", "css/styles.css", "css/react-resizable-styles.css"),
    Asset("react-grid-layout", "0.16.3", "css/styles.css", "css/react-grid-layout-styles.css"),
    _bootstrap("css/bootstrap.min.css", "css/bootstrap.min.css"),
    Asset("classnames", "2.2.5", "index.js", "fonts/classnames"),
    Asset("layout-bin-packer", "1.4.0", "dist/layout-bin-packer.js", "js/layout_bin_packer.js"),
    _bootstrap(f"{_GLYPHS}.eot", f"{_GLYPHS}.eot"),
    _bootstrap(f"{_GLYPHS}.woff2", f"{_GLYPHS}.woff2"),
    _bootstrap(f"{_GLYPHS}.woff", f"{_GLYPHS}.woff"),
    _bootstrap(f"{_GLYPHS}.ttf", f"{_GLYPHS}.ttf"),
    _bootstrap(f"{_GLYPHS}.svg", f"{_GLYPHS}.svg#glyphicons_halflingsregular"),
    # Not in download_scripts: the name bootstrap.min.css really makes browsers fetch.
    _bootstrap(f"{_GLYPHS}.svg", f"{_GLYPHS}.svg"),
    _mathjax("config/Safe.js"),
    _mathjax("config/TeX-AMS-MML_HTMLorMML.js"),
    _mathjax("extensions/Safe.js"),
    _mathjax("jax/output/SVG/fonts/TeX/fontdata.js"),
    _mathjax("jax/output/SVG/jax.js"),
    _mathjax("jax/output/SVG/fonts/TeX/Size1/Regular/Main.js"),
    _mathjax("jax/output/SVG/config.js"),
    _mathjax("MathJax.js"),
)


def visdom_package_dir() -> Path:
    """The directory of the visdom package this interpreter would import.

    Found without importing visdom: its ``__init__`` imports torch, which costs
    more than the whole warm run.
    """
    spec = importlib.util.find_spec("visdom")
    if spec is None or spec.origin is None:
        raise ProvisionError(
            "visdom is not installed in this interpreter; pip install 'remote-train-monitor[visualizer]'"
        )
    return Path(spec.origin).resolve().parent


def visdom_version(package_dir: Path) -> str:
    """visdom's version as ``visdom.__version__`` computes it (from its VERSION file)."""
    try:
        return (package_dir / "VERSION").read_text().strip()
    except OSError:
        return "no_version_file"


def read_members(tarball: Path, members: set[str]) -> dict[str, bytes]:
    """Read the named files (paths inside the package) from an npm tarball."""
    wanted = {f"package/{m}": m for m in members}
    found: dict[str, bytes] = {}
    with tarfile.open(tarball, "r:gz") as tf:
        for info in tf:
            name = wanted.get(info.name)
            if name is None or not info.isfile():
                continue
            handle = tf.extractfile(info)
            if handle is not None:
                found[name] = handle.read()
            if len(found) == len(wanted):
                break  # the MathJax tarball has thousands of entries; stop early
    missing = sorted(members - found.keys())
    if missing:
        raise ProvisionError(f"{tarball.name} lacks {', '.join(missing)}")
    return found


def provision(static_dir: Path, cache_dir: Path, visdom_version: str | None) -> int:
    """Place every asset under ``static_dir``; return how many files changed."""
    by_spec: dict[str, list[Asset]] = defaultdict(list)
    for asset in ASSETS:
        by_spec[asset.spec].append(asset)
    changed = 0
    for spec, assets in by_spec.items():
        tarball = fetch_tarball(spec, cache_dir)
        try:
            contents = read_members(tarball, {a.member for a in assets})
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ProvisionError(
                f"cached tarball for {spec} is unreadable ({exc}); delete {tarball}"
            ) from exc
        except ProvisionError as exc:
            raise ProvisionError(f"npm package {spec}: {exc}") from exc
        for asset in assets:
            if write_if_changed(static_dir / asset.target, contents[asset.member]):
                log.info("installed %s from %s:%s", asset.target, spec, asset.member)
                changed += 1
    # Same marker download_scripts writes; with it present stock visdom downloads nothing.
    if visdom_version is not None and write_if_changed(
        static_dir / "version.built", visdom_version.encode()
    ):
        changed += 1
    return changed


def missing_assets(static_dir: Path) -> list[str]:
    """The asset files (paths under ``static_dir``) that are not there."""
    return [a.target for a in ASSETS if not (static_dir / a.target).is_file()]


def fix_command() -> str:
    """The command that installs the assets into the installed visdom."""
    return f"{sys.executable} -m {MODULE}"


def served_static_dir(tarball_dir: Path | None = None) -> Path | None:
    """The static directory a visdom server should serve: None for visdom's own.

    visdom's own ``static/`` when it is complete; else a copy of it in the user's
    cache, completed from the npm registry (or from the tarballs cached in ``tarball_dir``,
    default ``npm-assets`` in the user's cache) the first time. Raises
    ProvisionError, saying what is missing and how to fix it, when the files
    can not be had.
    """
    package_dir = visdom_package_dir()
    own = package_dir / "static"
    missing = missing_assets(own)
    if not missing:
        return None
    version = visdom_version(package_dir)
    cache = user_cache_dir()
    static_dir = cache / f"visdom-{version}-static"
    if not missing_assets(static_dir):
        log.info("visdom's JS/CSS files are missing from %s: serving %s", own, static_dir)
        return static_dir
    log.info(
        "visdom's JS/CSS files are missing from %s (%d of %d, e.g. %s): "
        "fetching them from the npm registry (%s) into %s (once)",
        own,
        len(missing),
        len(ASSETS),
        missing[0],
        registry(),
        static_dir,
    )
    try:
        # visdom's own files (index.html, main.js, ...) must sit next to the fetched ones.
        shutil.copytree(own, static_dir, dirs_exist_ok=True)
        provision(static_dir, tarball_dir or cache / "npm-assets", version)
    except (ProvisionError, OSError) as err:
        raise ProvisionError(
            f"visdom's JS/CSS files are missing from {own} ({len(missing)} of {len(ASSETS)}, "
            f"e.g. {missing[0]}), so its page would be blank, and fetching them failed: {err}. "
            f"Fix: with network access to {registry()}, run `{fix_command()}`"
        ) from None
    return static_dir


def _parser(default_cache_dir: Path | None, prog: str) -> argparse.ArgumentParser:
    """The command's options; ``default_cache_dir`` as in :func:`main`."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Install the JS/CSS/font files visdom serves, from the npm registry "
        "(tarballs cached: later runs need no network).",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=default_cache_dir or user_cache_dir() / "npm-assets",
        metavar="DIR",
        help="npm tarball cache (default %(default)s)",
    )
    parser.add_argument(
        "--static-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="target dir (default: the installed visdom's static/, or when that is not "
        "writable the copy in the user's cache that the visualizer then serves)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every cache hit")
    return parser


def main(
    argv: list[str] | None = None,
    default_cache_dir: Path | None = None,
    prog: str = f"python -m {MODULE}",
) -> int:
    """Command-line entry point; returns the process exit status.

    ``default_cache_dir`` is the tarball cache used without ``--cache-dir``
    (default: ``npm-assets`` in :func:`user_cache_dir`).
    """
    args = _parser(default_cache_dir, prog).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(name)s: %(message)s",
    )
    started = time.monotonic()
    try:
        if args.static_dir is None:
            package_dir = visdom_package_dir()
            static_dir, version = package_dir / "static", visdom_version(package_dir)
            if not os.access(static_dir, os.W_OK):  # a system-wide or read-only install
                log.info("%s is not writable: completing the visualizer's copy instead", static_dir)
                static_dir = served_static_dir(args.cache_dir) or static_dir
                log.info("visdom's files are complete in %s", static_dir)
                return ExitCode.OK
        else:
            static_dir, version = args.static_dir, None
        changed = provision(static_dir, args.cache_dir, version)
    except ProvisionError as exc:
        log.error("%s", exc)
        return ExitCode.UNAVAILABLE
    except OSError as exc:  # site-packages not writable, disk full
        log.error("can not write the assets: %s; choose another place with --static-dir", exc)
        return ExitCode.FAILED
    log.info(
        "%d visdom asset files in %s (%d changed) in %.1fs",
        len(ASSETS),
        static_dir,
        changed,
        time.monotonic() - started,
    )
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
