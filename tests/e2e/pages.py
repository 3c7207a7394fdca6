"""Reading a visdom page left open, and comparing it with what the server holds."""

from __future__ import annotations

from typing import Any

from tests.visualizer.conftest import VisdomReader
from tests.visualizer.test_browser import PLOTS_JS

# Per pane: its title, and an image pane's caption and slider (max, position).
PANES_JS = """
return Array.from(document.querySelectorAll('.react-grid-item')).map(item => {
  const bar = item.querySelector('.bar');
  const slider = item.querySelector('input[type=range]');
  const caption = Array.from(item.querySelectorAll('.widget')).map(w => w.innerText)
    .find(t => t.includes(' @ step '));
  return {title: bar ? bar.innerText.trim().split('\\n').pop().trim() : '',
          caption: caption || null, slider: slider ? [+slider.max, +slider.value] : null};
});
"""


def console_errors(driver: Any) -> list[str]:
    """The browser's SEVERE console messages since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def panes(driver: Any) -> dict[str, dict]:
    """Title -> pane, as the page in the driver's current tab shows them."""
    return {p["title"]: p for p in driver.execute_script(PANES_JS)}


def _raw_ends(traces: list[dict]) -> dict[str, Any]:
    """Trace name -> its last x, for the raw (not smoothed) traces of a plot."""
    return {t["name"]: t["x"][-1] for t in traces if t.get("meta") != "smoothed" and t["x"]}


def differences(driver: Any, reader: VisdomReader, env: str) -> list[str]:
    """Where the page in the current tab differs from the server's windows of ``env``."""
    server = {w["title"]: w for w in reader.windows(env).values()}
    shown = panes(driver)
    wrong = [f"page lacks {t!r}" for t in server if t not in shown]
    wrong += [f"page has {t!r} the server lacks" for t in shown if t not in server]
    for plot in driver.execute_script(PLOTS_JS):
        window = server.get(plot["title"])
        if window is None or window.get("type") != "plot":
            continue
        page = {n: x for n, x, s in zip(plot["names"], plot["x_last"], plot["smoothed"]) if not s}
        if page != _raw_ends(window["content"]["data"]):
            wrong.append(f"plot {plot['title']!r} ends at {page}, the server's at another step")
    for title, pane in shown.items():
        window = server.get(title)
        if pane["slider"] is None or window is None or window.get("type") != "image_history":
            continue
        newest = window["content"][-1]["caption"]
        if pane["caption"] != newest or pane["slider"][0] != len(window["content"]) - 1:
            wrong.append(f"image pane {title!r} shows {pane['caption']!r}, not {newest!r}")
    return wrong
