#!/usr/bin/env python3
"""Install the JS/CSS/font files visdom serves into the installed visdom, from the npm registry.

Run by ``make install``; no ``npm`` needed: the tarballs come over HTTPS, each
checked against the registry's published sha512 (:mod:`visualizer.server.tarballs`).

A thin entry point: the implementation is :mod:`visualizer.server.assets` (also
``python -m visualizer.server.assets``), which the visualizer uses as well when it
finds the files missing. Here the tarballs are cached under the
repository's ``.cache/npm-assets/``, so a rebuilt venv needs no network.

Usage: ``.venv/bin/python scripts/provision_visdom_assets.py [--cache-dir DIR]
[--static-dir DIR] [-v]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Run as a file, this script has scripts/ on sys.path, not the package next to it.
sys.path.insert(0, str(REPO_ROOT))

from visualizer.server.assets import main  # noqa: E402  (needs the path above)

if __name__ == "__main__":
    sys.exit(main(default_cache_dir=REPO_ROOT / ".cache" / "npm-assets", prog=sys.argv[0]))
