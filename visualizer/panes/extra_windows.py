"""Windows for the record kinds beyond scalars and images (text, histograms, hparams, ...).

:class:`ExtraWindows` draws a run's :class:`~visualizer.model.extradata.ExtraData` into its visdom
env: text panes, a histogram as TensorBoard's distribution view (percentile
lines over steps), one hparams table, PR curves as lines, embeddings as a
scatter, meshes as visdom meshes, W&B Tables as tables (images as thumbnails), audio and video as HTML5 panes, and each
custom-scalar chart as a window of the scalars it names. Windows are redrawn
whole when their data changes: these records are few, unlike scalar points.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from run_core.tags import key_of
from snapshot_store.format.kinds import HPARAMS_TAG
from visualizer import markup
from visualizer.layout import LINES_MODE, PLOT_SIZE, safe_id, text_pane_height
from visualizer.markup import Html
from visualizer.model.extradata import ExtraKey
from visualizer.model.rundata import RunData, SeriesKey
from visualizer.model.series import Series

from .artifacts import ARTIFACTS_WIN, artifacts_pane
from .hparams import MAX_COLUMNS, budgeted, last_value, table_row

EXTRA_WIN_PREFIX = "extra_"
HPARAMS_WIN = f"{EXTRA_WIN_PREFIX}hparams"
# TensorBoard's distribution view: these percentiles of each step's histogram.
PERCENTILES = (0, 7, 16, 31, 50, 69, 84, 93, 100)
MAX_HISTOGRAM_STEPS = 500  # drawn per histogram window, evenly spaced over the run
LAYOUT_REFRESH_SECONDS = 5.0  # custom-scalar charts redraw their scalars whole: not too often
LAYOUT_MAX_POINTS = 2000  # per trace of a custom-scalar chart
THUMBNAIL_PX = 64  # a W&B Table's image cells are drawn at most this tall
TABLE_DATA = "all of them: Api().run(...).tables(), or python -m visualizer export --kind table"


def extra_window(kind: str, tag: str) -> str:
    """Window id of ``tag``'s records of ``kind``."""
    return f"{EXTRA_WIN_PREFIX}{kind}_{safe_id(tag)}"


def percentiles(data: dict[str, Any], percents: tuple[int, ...] = PERCENTILES) -> list[float]:
    """Values at ``percents`` of a stored histogram, interpolated within its buckets."""
    counts = np.asarray(data["counts"], dtype=np.float64)
    rights = np.asarray(data["limits"], dtype=np.float64)
    lefts = np.concatenate([[data["min"]], rights[:-1]])
    cum = np.cumsum(counts)
    total = cum[-1] if len(cum) else 0.0
    out = []
    for p in percents:
        if total <= 0:
            out.append(float(data["min"]))
            continue
        target = total * p / 100
        i = min(int(np.searchsorted(cum, target, side="left")), len(cum) - 1)
        below = cum[i - 1] if i else 0.0
        share = (target - below) / counts[i] if counts[i] else 0.0
        value = lefts[i] + share * (rights[i] - lefts[i])
        out.append(float(np.clip(value, data["min"], data["max"])))
    return out


def _text_msg(env: str, win: str, title: str, content: Html) -> dict[str, Any]:
    return {
        "data": [{"content": content, "type": "text"}],
        "win": win,
        "eid": env,
        "opts": {"title": title},
    }


def _plot_msg(
    env: str, win: str, title: str, traces: list[dict], axes: tuple[str, str]
) -> dict[str, Any]:
    return {
        "data": traces,
        "win": win,
        "eid": env,
        "layout": {
            "title": title,
            "showlegend": True,
            "xaxis": {"title": axes[0]},
            "yaxis": {"title": axes[1]},
            "margin": {"l": 60, "r": 60, "t": 60, "b": 60},
        },
        "opts": {"title": title, "showlegend": True},
    }


def _data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def _cell(value: Any) -> str:
    """A table cell's text: a float to 6 significant digits (0.1 * 3 shows as 0.3)."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _table(header: list[str], rows: list[list[Any]], what: str, where: str) -> Html:
    """A table within a pane's budget (:func:`.hparams.budgeted`): the rows that fit, then
    how many more ``what`` there are and ``where``."""
    body = budgeted((table_row([_cell(v) for v in row]) for row in rows), len(rows), what, where)
    return markup.element("table", table_row(header, "th"), *body)


def _table_cell(value: Any) -> object:
    """A W&B Table's cell: an image (PNG bytes) as a thumbnail, else its text (escaped)."""
    if isinstance(value, bytes):
        src = markup.escaped(_data_url("image/png", value))
        return Html(f"<img src='{src}' style='max-height:{THUMBNAIL_PX}px'>")
    return "" if value is None else _cell(value)


def _wandb_table(data: dict[str, Any]) -> Html:
    """A logged W&B Table: its columns, then the rows that fit the pane, images as thumbnails."""
    rows = (table_row([_table_cell(v) for v in row]) for row in data["rows"])
    body = budgeted(rows, len(data["rows"]), "rows", TABLE_DATA)
    return markup.element("table", table_row(data["columns"], "th"), *body)


class ExtraWindows:
    """Draws a run's :class:`ExtraData` into one visdom env; redraws what changed."""

    def __init__(self, post: Callable[[str, dict[str, Any]], object], env: str) -> None:
        self._post = post
        self.env = env
        self.drawn: set[ExtraKey] = set()
        self._layout_at = 0.0
        self.run_link: Callable[[str], str] | None = None  # another run's page, for the artifacts

    def invalidate(self) -> None:
        """Forget what the server shows: the next draw draws every window again."""
        self.drawn.clear()

    def draw(self, run: RunData, now: float | None = None) -> bool:
        """Post every window whose data changed or is not drawn; True when something was sent."""
        extras = run.extras
        keys = set(extras.latest) | {("text", t) for t in extras.texts}
        keys |= {("histogram", t) for t in extras.histograms}
        keys |= {("layout", "")} if extras.layout else set()
        keys |= {("hparams", "")} if extras.hparams else set()
        keys |= {("artifacts", "")} if extras.artifacts else set()
        todo = (extras.changed | (keys - self.drawn)) & keys
        now = time.time() if now is None else now
        if now - self._layout_at >= LAYOUT_REFRESH_SECONDS:  # charts follow their scalars
            todo |= {k for k in keys if k[0] == "layout"}
            self._layout_at = now
        for key in sorted(todo):
            msg = self._message(run, key)
            if msg is not None:
                self._post("events", msg)
            self.drawn.add(key)
        extras.changed.clear()
        return bool(todo)

    def _message(self, run: RunData, key: ExtraKey) -> dict[str, Any] | None:
        kind, tag = key
        extras, env, win = run.extras, self.env, extra_window(kind, tag)
        if kind == "text":
            entries = markup.join(
                *(
                    markup.element(
                        "p", markup.element("b", f"step {step}"), Html("<br>"), _pre(text)
                    )
                    for step, text in reversed(extras.texts[tag])
                )
            )
            return _text_msg(env, win, tag, entries)
        if kind == "histogram":
            return self._distribution(tag, extras.histograms[tag], win)
        if kind == "hparams":
            return self._hparams(run)
        if kind == "layout":
            self._layout_charts(run, extras.layout)
            return None
        if kind == "artifacts":
            pane = artifacts_pane(extras.artifacts, run.name, self.run_link)
            return _text_msg(env, ARTIFACTS_WIN, "artifacts", pane)
        _, _, step, _wall, data = extras.latest[key]
        title = f"{tag} @ step {step}"
        if kind == "pr_curve":
            trace = {"x": data["recall"], "y": data["precision"], "name": tag}
            trace.update(mode="lines", type="scatter")
            return _plot_msg(env, win, title, [trace], ("recall", "precision"))
        if kind in ("points", "embedding"):  # an embedding's 2-D view
            trace = {"x": data["x"], "y": data["y"], "text": data["labels"], "name": tag}
            trace.update(mode="markers", type="scatter", marker={"size": 6})
            return _plot_msg(env, win, title, [trace], ("component 1", "component 2"))
        if kind == "mesh":
            return _plot_msg(env, win, title, [_mesh_trace(data)], ("x", "y"))
        if kind == "audio":
            src = _data_url("audio/wav", data["wav"])
            audio = f"<audio controls><source src='{markup.escaped(src)}'></audio>"
            return _text_msg(env, win, title, Html(audio))
        if kind == "video":
            src = _data_url("image/gif", data["gif"])
            video = f"<img src='{markup.escaped(src)}' style='image-rendering:pixelated'>"
            return _text_msg(env, win, title, Html(video))
        if kind == "alert":  # a W&B-style run.alert(): the latest of this title
            text = markup.element("p", markup.element("b", data["level"]), " ", data["text"])
            return _text_msg(env, win, f"alert: {tag} @ step {step}", text)
        if kind == "table":  # a W&B Table: the latest logged under this key
            return _text_msg(env, win, title, _wandb_table(data))
        if kind == "graph":  # the outline; the traced graph is for export
            return _text_msg(env, win, tag, _pre(data["text"]))
        if kind == "tensor":
            values = ", ".join(f"{v:.6g}" for v in data["values"][:200])
            more = " ..." if len(data["values"]) > 200 else ""
            head = f"shape {data['shape']}, {data['dtype']}"
            return _text_msg(env, win, title, _pre(f"{head}\n[{values}{more}]"))
        return None

    def _distribution(self, tag: str, by_step: dict[int, dict[str, Any]], win: str) -> dict:
        steps = sorted(by_step)
        if len(steps) > MAX_HISTOGRAM_STEPS:
            picks = np.linspace(0, len(steps) - 1, MAX_HISTOGRAM_STEPS).round().astype(int)
            steps = [steps[i] for i in sorted(set(picks.tolist()))]
        rows = np.array([percentiles(by_step[s]) for s in steps])
        traces = [
            {
                "x": steps,
                "y": rows[:, i].tolist(),
                "name": {0: "min", 50: "median", 100: "max"}.get(p, f"{p}%"),
                "mode": LINES_MODE,
                "type": "scatter",
            }
            for i, p in enumerate(PERCENTILES)
        ]
        return _plot_msg(self.env, win, f"{tag}: distribution", traces, ("step", "value"))

    def _hparams(self, run: RunData) -> dict[str, Any]:
        """The hparams table: a row per session, a NaN metric taken from its scalar."""
        records = run.extras.hparams
        names = sorted({k for r in records for k in r[4]["hparams"]})
        metrics = sorted({k for r in records for k in r[4]["metrics"]})
        every = "all of them: python -m visualizer export --kind hparams"
        more = len(names) - max(1, MAX_COLUMNS - len(metrics))  # the metrics are all shown
        names = names[: len(names) - max(more, 0)]
        rows, calls = [], run.extras.hparams_dropped  # add_hparams calls without a run name
        for _kind, tag, _step, _wall, data in records:
            calls += tag == HPARAMS_TAG
            run_cell = f"{tag} {calls}" if tag == HPARAMS_TAG else tag
            values = [_metric(run, data["metrics"], m) for m in metrics]
            rows.append([run_cell, *(data["hparams"].get(n, "") for n in names), *values])
        table = _table(["run", *names, *metrics], rows, "rows", every)
        if more > 0:
            table = markup.join(table, markup.element("p", f"… {more:,} more hparams ({every})"))
        if run.extras.hparams_dropped:
            older = f"{run.extras.hparams_dropped} older rows not shown"
            table = markup.join(table, markup.element("p", older))
        msg = _text_msg(self.env, HPARAMS_WIN, f"{run.name}: hparams", table)
        # As tall as its rows (a plot's height at most: more rows scroll), not a blank plot's.
        height = min(text_pane_height(table, PLOT_SIZE[0]), PLOT_SIZE[1])
        msg["opts"].update(width=PLOT_SIZE[0], height=height)
        return msg

    def _layout_charts(self, run: RunData, layout: dict[str, Any]) -> None:
        """One window per custom-scalar chart: its tags' scalars (Margin: value and bounds)."""
        for category, charts in layout.items():
            for title, (chart, tags) in charts.items():
                traces = []
                for tag in tags:
                    series = run.series.get(_series_key(run, tag))
                    if series is not None:
                        every = max(1, len(series) // LAYOUT_MAX_POINTS)
                        x = series.steps()[::every].tolist()
                        y = series.values()[::every].tolist()
                        traces.append(
                            {"x": x, "y": y, "name": tag, "mode": LINES_MODE, "type": "scatter"}
                        )
                if chart == "Margin" and len(traces) == 3:
                    traces[1].update(line={"dash": "dot"})
                    traces[2].update(line={"dash": "dot"}, fill="tonexty")
                win = extra_window("layout", f"{category}_{title}")
                name = f"{category}: {title}"
                if traces:
                    msg = _plot_msg(self.env, win, name, traces, ("step", "value"))
                else:  # its scalars have not arrived (yet): say which are awaited
                    msg = _text_msg(self.env, win, name, markup.join(f"no scalars yet for {tags}"))
                self._post("events", msg)


def _pre(value: object) -> Html:
    """``value`` as preformatted text."""
    return markup.element("pre", value)


def _series_key(run: RunData, tag: str) -> SeriesKey:
    """The key of the scalar ``tag`` in ``run``: as logged, or a bare tag in a store from
    before names were kept (group ``scalars``)."""
    key = key_of(tag)
    return ("scalars", tag) if key not in run.series and ("scalars", tag) in run.series else key


def plotted_series(run: RunData) -> dict[SeriesKey, Series]:
    """The series of ``run`` drawn in plot windows: all but a metric of the hparams table that
    was logged once (Lightning's ``hp_metric`` placeholder), which the table shows."""
    in_table = {
        _series_key(run, name)
        for *_, data in run.extras.hparams
        for name, value in data["metrics"].items()
        if value != value  # NaN: the table reads the scalar
    }
    return {
        key: series for key, series in run.series.items() if key not in in_table or len(series) > 1
    }


def _metric(run: RunData, given: dict[str, float], name: str) -> Any:
    """An hparams row's metric: the value given, else the last of the scalar ``name``."""
    value = given.get(name)
    if value is None:
        return ""
    if value == value:  # not NaN: the value add_hparams was given
        return value
    last = last_value(run, _series_key(run, name))
    return "-" if last is None else last


def _mesh_trace(data: dict[str, Any]) -> dict[str, Any]:
    """A plotly mesh3d trace, as visdom's ``mesh`` sends it."""
    verts = np.asarray(data["vertices"]).reshape(-1, 3)
    trace: dict[str, Any] = {
        "x": verts[:, 0].tolist(),
        "y": verts[:, 1].tolist(),
        "z": verts[:, 2].tolist(),
    }
    if data["faces"]:
        faces = np.asarray(data["faces"]).reshape(-1, 3)
        trace.update(i=faces[:, 0].tolist(), j=faces[:, 1].tolist(), k=faces[:, 2].tolist())
    else:
        trace["alphahull"] = 0  # no faces: the convex hull, as plotly draws points
    if data["colors"]:
        colors = np.asarray(data["colors"]).reshape(-1, 3)
        trace["vertexcolor"] = [f"rgb({r},{g},{b})" for r, g, b in colors.tolist()]
    trace.update(type="mesh3d", opacity=1.0, name="mesh")
    return trace
