"""The snapshot as one HTML file: plotly.js, the page's code and style, and the data, inline.

plotly.js is the file ``make install`` provisions into visdom's static directory
(:mod:`visualizer.server.assets`), checked here against its SHA-256 before it goes into a
file someone else will open; nothing is fetched. The page's own HTML, CSS and JS are
package data beside this module. The file's Content-Security-Policy allows its two
scripts by hash and nothing from the network: no request leaves the page it opens in.
"""

from __future__ import annotations

import base64
import hashlib
import re
from importlib import resources
from typing import Any

from visualizer.server.assets import ASSETS, fix_command, visdom_package_dir, visdom_version
from visualizer.userdirs import user_cache_dir

from .columns import script_json

# plotly.js-dist-min 2.11.1's plotly.min.js, as the npm registry's integrity check passed it.
PLOTLY_SHA256 = "dd146b2db18d4ced4743018fa65ada14b723bf1aae08b559a5576ba8116cd889"
_PLOTLY = next(asset.target for asset in ASSETS if asset.package == "plotly.js-dist-min")
# The page's own files, in the order they go in.
_SCRIPTS = ("plots.js", "filter.js", "page.js")
_MARK = re.compile(r"@@(\w+)@@")
_CSP = (
    "default-src 'none'; script-src {scripts}; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; "
    "base-uri 'none'"
)


class AssetMissingError(Exception):
    """plotly.js is not where ``make install`` puts it, or is not the file it should be."""


def plotly_js() -> str:
    """The provisioned plotly.min.js; AssetMissingError saying how to get it."""
    package_dir = visdom_package_dir()
    places = [
        package_dir / "static" / _PLOTLY,
        user_cache_dir() / f"visdom-{visdom_version(package_dir)}-static" / _PLOTLY,
    ]
    for place in places:
        try:
            data = place.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(data).hexdigest() != PLOTLY_SHA256:
            raise AssetMissingError(
                f"{place} is not plotly.js 2.11.1 as provisioned (its SHA-256 differs): "
                f"run `{fix_command()}` to install it again"
            )
        return data.decode("utf-8")
    raise AssetMissingError(
        f"plotly.js is not installed ({places[0]}): run `make install` or `{fix_command()}`"
    )


def _own(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _script_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def render(data: dict[str, Any], plotly: str | None = None) -> str:
    """The whole HTML file showing ``data`` (:func:`~.content.build`'s)."""
    plotly = plotly_js() if plotly is None else plotly
    if re.search(r"</script|<!--", plotly, re.IGNORECASE):
        raise AssetMissingError("plotly.js holds text that would end its <script> element")
    code = "\n".join(_own(name) for name in _SCRIPTS)
    parts = {
        "CSP": _CSP.format(scripts=f"{_script_hash(plotly)} {_script_hash(code)}"),
        "STYLE": _own("page.css"),
        "DATA": script_json(data),
        "PLOTLY": plotly,
        "CODE": code,
    }
    # One pass over the template: what is put in is never searched for marks itself.
    return _MARK.sub(lambda mark: parts[mark.group(1)], _own("page.html"))
