"""Which visdom window a store group is drawn in, and what that window is called."""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

from run_core.tags import tag_of
from snapshot_store.format.schema import GROUP_WORDS, SECTION_WORDS


@dataclass(frozen=True)
class WindowSpec:
    """A plot window: its visdom id (stable, so a restart redraws the same window) and labels."""

    win: str
    title: str
    ylabel: str
    order: int  # position among a run's windows: losses first, odd groups last
    height: int = 0  # pane height in pixels; 0: PLOT_SIZE's
    # A share (``cpu_percent``): its y axis reaches down to 0, so that noise around 100%
    # does not fill the pane as if it were a swing.
    from_zero: bool = False


# The conventional groups' windows, by every word that names one (the vocabulary is
# snapshot_store.format.schema's). Anything else (a SummaryWriter tag ``A/b`` arrives as
# group ``A``) gets a window of its own, titled by the group.
_KNOWN = {
    word: {
        "train": WindowSpec("train", "train losses", "loss", 0),
        "validation": WindowSpec("validation", "validation", "loss", 1),
        "metrics": WindowSpec("metrics", "metrics", "metrics", 2),
        "lr": WindowSpec("lr", "learning rate", "learning rate", 3),
        "throughput": WindowSpec("throughput", "throughput", "per second", 4),
    }[group]
    for word, group in GROUP_WORDS.items()
}

# A plot pane's size in pixels: two side by side fill a 1280-pixel window, three a 1920 one;
# the page widens every pane by the same factor to fill whole columns of its own width
# (visualizer.server.page), never narrower. visdom's page puts this margin around each pane.
PLOT_SIZE = (600, 400)
PANE_MARGIN = 10
# A pane as wide as two plot panes and the margin between (the runs table). A first row's
# panes share this width, margins included (a run's status, view and options; the
# comparison's table, view and compare panes), so that widened alike they still make one row.
TWO_COLUMNS = 2 * PLOT_SIZE[0] + PANE_MARGIN
STATUS_WIDTH, VIEW_WIDTH, OPTIONS_WIDTH = 330, 300, 560
COMPARE_TABLE_WIDTH = 590  # beside the view and compare panes, each VIEW_WIDTH wide
# ... where the comparison's table needs more, it takes from the view and compare panes down
# to this width each (their labels and choices still whole); wider tables scroll.
MIN_CONTROLS_WIDTH = 220
# The small panes (status, view, options; the comparison's table and panes) make the first
# row, all this tall: the page packs its panes in rows and then floats each pane up into
# any hole above it, so a row of unequal heights would give a different layout depending
# on how the panes happened to arrive.
HEADER_HEIGHT = 250
# ... and at most as tall as a plot: a run's forty options scroll in their pane (as W&B's
# config table does) rather than push every plot below the fold.
MAX_HEADER_HEIGHT = PLOT_SIZE[1]

# A line trace's mode: Plotly reads "lines+lines" as "lines" (a repeated flag is dropped)
# and draws and hovers it the same, but visdom's page shows its own "smooth lines"
# button only for a mode of exactly "lines"; that button smooths the decimated points
# drawn, not the series, so its numbers would be wrong.
LINES_MODE = "lines+lines"

# A text pane's blocks as visdom's page draws them: a table row 22 px, a paragraph's line
# 20 px and 10 px under it; a wrapped line estimated at 8 px a character, wide enough for
# the code font, so that the estimate errs on the tall side. The pane's bar and padding besides.
_ROW_PX, _LINE_PX, _PARAGRAPH_GAP_PX, _CHAR_PX, _TEXT_CHROME_PX = 22, 20, 10, 8, 30
_BLOCK = re.compile(r"<(tr|p)\b[^>]*>(.*?)</\1>", re.S)
# A table's columns as the page sets them: each cell a character of its proportional font
# (8.2 px measured, rounded up: a column's estimate errs wide) and its cell's right padding.
_TABLE = re.compile(r"<table\b[^>]*>(.*?)</table>", re.S)
_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.S)
_CELL_TAG = re.compile(r"<t([dh])\b([^>]*)>(.*?)</t\1>", re.S)
_WIDE_CHAR_PX, _CELL_PAD_PX = 9, 12
_TAG = re.compile(r"<[^>]+>")

STATUS_WIN = "status"
OPTIONS_WIN = "options"
DOWNLOAD_WIN = "download"
IMAGE_WIN_PREFIX = "image_"
# The y axis names what a window plots: its series' names while they fit, else its group.
MAX_YLABEL_CHARS = 40

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_id(text: str) -> str:
    """``text`` reduced to characters safe in visdom window and env ids."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


def window_for_group(group: str) -> WindowSpec:
    """The window that shows ``group``'s series (one trace per series name)."""
    known = _KNOWN.get(group.lower())
    if known is not None:
        return known
    return WindowSpec(f"group_{safe_id(group)}", group, group, 10)


# Scores (accuracy, F1, IoU...: a share from 0 to 1, or a percent) drawn on a loss's axis are
# flattened to a line at its top: the train and validation windows put them in a window of
# their own. One rule, the run's page's and the comparison's (whose windows take their titles
# and places from here), and the snapshot file's.
_SCORE = re.compile(
    r"(?:^|[_\-.])(?:acc|accuracy|top\d+|top_\d+|f1|fscore|precision|recall|auc|auroc|"
    r"iou|miou|dice|map|bleu|rouge\w*|r2)(?:$|[_\-.])"
)
_SCORES = {
    "train": WindowSpec("train_scores", "train scores", "score", 0),
    "validation": WindowSpec("validation_scores", "validation scores", "score", 1),
}


def is_score(name: str) -> bool:
    """True for a score's usual names (``accuracy``, ``val_acc_epoch``, ``top5``, ``f1``)."""
    return _SCORE.search(name.lower()) is not None


# Groups whose series each get a window (small multiples, as W&B draws system metrics):
# their units differ (percent, GiB, a share of time), and one axis flattened all but one.
_PER_SERIES = {"system"}
PER_SERIES_ORDER = 20  # after every group's window

# The frameworks' words for the conventional windows, as a name's first part (``eval/loss``,
# ``val_loss_step``, ``training_loss``). Display only: the name stays as logged.
_SECTIONS = SECTION_WORDS


def home_window(group: str, name: str) -> WindowSpec:
    """The window of ``group`` itself (series ``name`` of a per-series group: its own)."""
    if group.lower() not in _PER_SERIES:
        return window_for_group(group)
    win = f"group_{safe_id(group)}_{safe_id(name)}"
    share = name.lower().endswith(("percent", "_pct", "%"))
    return WindowSpec(win, f"{group}: {name}", name, PER_SERIES_ORDER, from_zero=share)


def window_for(group: str, name: str) -> WindowSpec:
    """The window that shows series ``name`` of ``group`` (the display rule over logged names).

    A name's section (its group, or for a name without ``/`` a section word before
    its first ``_``: ``val_loss``) picks the conventional window (``eval`` and
    ``val`` share validation); a learning rate goes to the learning-rate window,
    ``*_per_second`` to throughput, and values on their own scale (``epoch``,
    ``*runtime``, ``total_flos``) get a window each. Another name without a
    section is a window of its own, as TensorBoard gives such a tag a card,
    unless it is a loss (``loss``, ``g_loss``): those share the train losses.
    A score (:func:`is_score`) of train or validation goes to that group's scores window.
    """
    if group.lower() in _PER_SERIES:
        return home_window(group, name)
    head, leaf = group, name.rpartition("/")[2]
    if not group:
        word, sep, rest = name.partition("_")
        if sep and rest and word.lower() in _SECTIONS:
            head, leaf = word, rest
    leaf = leaf.lower()
    if _is_lr(leaf) or _is_lr(head.lower()):
        return _KNOWN["lr"]
    if leaf.endswith("per_second"):
        return _KNOWN["throughput"]
    if leaf == "epoch" or leaf.endswith("runtime") or leaf == "total_flos":
        return window_for_group(tag_of(group, name))
    if not head:
        return _KNOWN["train"] if "loss" in leaf else window_for_group(name)
    spec = window_for_group(_SECTIONS.get(head.lower(), head))
    return _SCORES[spec.win] if spec.win in _SCORES and is_score(leaf) else spec


def _is_lr(word: str) -> bool:
    """True for a learning rate's usual names: lr, learning_rate, lr-Adam, lr_head."""
    return word in ("lr", "learning_rate") or word.startswith(("lr-", "lr_"))


def trace_label(spec: WindowSpec, key: tuple[str, str], groups: int) -> str:
    """The legend's name for series ``key`` in ``spec``'s window holding ``groups`` groups:
    the logged name, shortened to the series name where the window is the group's own."""
    group, name = key
    home = home_window(group, name)
    if groups == 1 and spec in (home, _SCORES.get(home.win)):
        return name
    return tag_of(group, name)


def window_order(spec: WindowSpec) -> tuple[int, bool, str]:
    """Where ``spec``'s window stands among a run's: by its order (a group's scores after its
    losses), small multiples by title."""
    return (
        spec.order,
        spec in _SCORES.values(),
        spec.title if spec.order == PER_SERIES_ORDER else "",
    )


def ylabel(spec: WindowSpec, names: list[str]) -> str:
    """What the y axis of ``spec``'s window says: the series it plots, or its usual label."""
    text = ", ".join(sorted(names))
    return text if names and len(text) <= MAX_YLABEL_CHARS else spec.ylabel


def image_window(group: str, name: str) -> str:
    """Window id of the latest image logged as ``name`` in ``group``."""
    return f"{IMAGE_WIN_PREFIX}{safe_id(tag_of(group, name))}"


def text_pane_height(markup: str, width: int) -> int:
    """The height in pixels a text pane ``width`` wide needs to show all of ``markup``'s table
    rows and paragraphs, none cut at its bottom edge."""
    per_line = max(1, width // _CHAR_PX)
    height = _TEXT_CHROME_PX
    for tag, inner in _BLOCK.findall(markup):
        lines = max(1, math.ceil(len(html.unescape(_TAG.sub("", inner))) / per_line))
        if tag == "tr":
            height += _ROW_PX + (lines - 1) * _LINE_PX
        else:
            height += lines * _LINE_PX + _PARAGRAPH_GAP_PX
    return height


def compare_row(table_px: int) -> tuple[int, int]:
    """The comparison's first row, one row TWO_COLUMNS wide as a run's page's first: the runs
    table's width, as wide as its columns need (``table_px``: :func:`text_pane_width`) from
    COMPARE_TABLE_WIDTH up to what leaves MIN_CONTROLS_WIDTH to each pane beside it (wider
    tables scroll), and the width of the view and compare panes, sharing the rest."""
    most = TWO_COLUMNS - 2 * (MIN_CONTROLS_WIDTH + PANE_MARGIN)
    table = min(max(COMPARE_TABLE_WIDTH, table_px), most)
    return table, (TWO_COLUMNS - table) // 2 - PANE_MARGIN


def text_pane_width(markup: str) -> int:
    """The width in pixels a text pane needs to show every column of ``markup``'s widest
    table whole, cells not wrapped (each column as wide as its longest cell; a cell spanning
    columns is left out), with the pane's padding and a scrollbar beside the rows."""
    widest = 0
    for table in _TABLE.findall(markup):
        columns: list[int] = []
        for row in _ROW.findall(table):
            cells = _CELL_TAG.findall(row)
            if any("colspan" in attrs for _, attrs, _ in cells):
                continue
            for i, (_, _, inner) in enumerate(cells):
                chars = len(html.unescape(_TAG.sub("", inner)))
                px = chars * _WIDE_CHAR_PX + _CELL_PAD_PX
                if i < len(columns):
                    columns[i] = max(columns[i], px)
                else:
                    columns.append(px)
        widest = max(widest, sum(columns))
    return widest + _TEXT_CHROME_PX
