"use strict";
// The snapshot's plots. What a window draws follows the live viewer's rules, mirrored
// here from the Python that defines them (tests compare the two on the same points):
// decimateIndices is visualizer/model/decimate.py's decimate_indices, smoothed is
// visualizer/model/smoothing.py's Smoother, pick and sample are visualizer/model/zoom.py's.

const ARRAYS = { int64: BigInt64Array, float64: Float64Array, int32: Int32Array, float32: Float32Array };

// A packed column (visualizer/snapshot/columns.py) as a Float64Array: base64, then zlib
// through the browser's own DecompressionStream, then the bytes of each number put back
// together (the column holds every number's first byte, then every second byte, ...), then
// widened: int32 differences summed into steps (delta), float32 numbers added to the
// column's base (a wall time's first), as columns.py's unpacked does.
async function decodeColumn(column) {
  const text = atob(column.shuffled);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const shuffled = new Uint8Array(await new Response(stream).arrayBuffer());
  const n = column.n, Typed = ARRAYS[column.type], width = Typed.BYTES_PER_ELEMENT;
  if (shuffled.length !== n * width) throw new Error(`a column of ${n} holds ${shuffled.length} bytes`);
  const joined = new Uint8Array(shuffled.length);
  for (let b = 0; b < width; b++) {
    for (let i = 0, at = b * n; i < n; i++) joined[i * width + b] = shuffled[at + i];
  }
  const typed = new Typed(joined.buffer);
  // Steps past 2**53 lose their last digits here, as they do in any plot's float axis.
  if (column.type === "int64") return Float64Array.from(typed, Number);
  const out = new Float64Array(n);
  if (column.delta) {
    for (let i = 0, sum = 0; i < n; i++) { sum += typed[i]; out[i] = sum; }
  } else if (column.base) {
    for (let i = 0; i < n; i++) out[i] = column.base + typed[i];
  } else {
    out.set(typed);
  }
  return out;
}

const decoded = new Map(); // a series' column, decoded once for every line that draws it

function column(packed, series, name) {
  const key = `${series}/${name}`;
  if (!decoded.has(key)) decoded.set(key, decodeColumn(packed[series][name]));
  return decoded.get(key);
}

// A line with the columns ``axis`` draws: wall times are decoded once a time axis is chosen.
async function decodeLine(line, packed, axis) {
  const names = ["values", axis === "step" ? "steps" : "times"];
  if (packed[line.series].low) names.push("low", "high");
  const columns = await Promise.all(names.map((name) => column(packed, line.series, name)));
  names.forEach((name, i) => { line[name] = columns[i]; });
  line.xs = line.xs || {};
}

function decimateIndices(values, maxPoints) {
  const n = values.length;
  if (n <= maxPoints) return Array.from({ length: n }, (_, i) => i);
  const buckets = Math.floor((maxPoints - 2) / 2);
  const size = Math.ceil((n - 2) / buckets);
  const out = [0, n - 1];
  for (let b = 0; b < buckets; b++) {
    const start = 1 + b * size;
    if (start >= n - 1) break;
    const stop = Math.min(n - 1, start + size);
    let lo = start, hi = start, low = Infinity, high = -Infinity;
    for (let i = start; i < stop; i++) {
      const v = values[i];
      if (!Number.isFinite(v)) continue; // never wins unless the whole bucket is non-finite
      if (v < low) { low = v; lo = i; }
      if (v > high) { high = v; hi = i; }
    }
    out.push(lo, hi);
  }
  return Array.from(new Set(out)).sort((a, b) => a - b);
}

function smoothed(values, weight) {
  const n = values.length, out = new Float64Array(n), first = values[0];
  let acc = 0, count = 0, flat = true;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    flat = flat && v === first; // a leading stretch equal to the first is drawn as it is
    if (!Number.isFinite(v)) { out[i] = v; continue; }
    count += 1;
    acc = weight * acc + (1 - weight) * v;
    out[i] = flat ? v : weight > 0 ? acc / (1 - Math.pow(weight, count)) : v;
  }
  return out;
}

function pick(x, lo, hi, finiteOnly) {
  const n = x.length, index = [], edge = [];
  const inside = (i) => x[i] >= lo && x[i] <= hi;
  for (let i = 0; i < n; i++) {
    const near = inside(i) || (i > 0 && inside(i - 1)) || (i < n - 1 && inside(i + 1));
    if (near && (!finiteOnly || Number.isFinite(x[i]))) { index.push(i); edge.push(!inside(i)); }
  }
  if (!index.length) {
    let before = -1, after = -1;
    for (let i = 0; i < n; i++) {
      if (x[i] < lo) before = i;
      else if (x[i] > hi && after < 0) after = i;
    }
    for (const i of [before, after]) if (i >= 0) { index.push(i); edge.push(true); }
  }
  return { index, edge };
}

function sample(values, chosen, budget) {
  if (!chosen) {
    return values.length <= budget ? Array.from({ length: values.length }, (_, i) => i)
      : decimateIndices(values, budget);
  }
  let index = chosen.index;
  const edges = chosen.edge.filter(Boolean).length;
  if (index.length > budget && index.length - edges <= budget) {
    index = index.filter((_, k) => !chosen.edge[k]);
  }
  if (index.length > budget) {
    const kept = decimateIndices(index.map((i) => values[i]), budget);
    index = kept.map((k) => index[k]);
  }
  return index;
}

// Plotly's date axis shows UTC: a wall time is shifted by the local offset of its moment,
// as visualizer/model/traces.py's local_ms does, so the axis reads the reader's own clock.
function localMs(times) {
  const out = new Float64Array(times.length);
  // A zone's offset changes only on a quarter hour: asked once per quarter, not per point
  // (a Date a point took 0.2 s over a million).
  const offsets = new Map();
  for (let i = 0; i < times.length; i++) {
    const ms = times[i] * 1000;
    if (!Number.isFinite(ms)) { out[i] = NaN; continue; }
    const quarter = Math.floor(ms / 900000);
    let offset = offsets.get(quarter);
    if (offset === undefined) {
      offset = new Date(quarter * 900000).getTimezoneOffset() * 60000;
      offsets.set(quarter, offset);
    }
    out[i] = ms - offset;
  }
  return out;
}

function xOf(line, axis, unitSeconds) {
  if (!line.xs[axis]) {
    if (axis === "step") line.xs[axis] = line.steps;
    else if (axis === "wall") line.xs[axis] = localMs(line.times);
    else {
      const origin = line.origin === null ? NaN : line.origin;
      line.xs[axis] = line.times.map((t) => (t - origin) / unitSeconds);
    }
  }
  return line.xs[axis];
}

function trace(line, index, x, y, color, legend, markers, size) {
  const kept = index.filter((i) => Number.isFinite(x[i])); // a point with no time has no place
  const t = {
    x: kept.map((i) => x[i]),
    y: kept.map((i) => (Number.isFinite(y[i]) ? y[i] : null)),
    name: line.label, type: "scatter", mode: "lines", legendgroup: line.label,
    showlegend: legend, line: { color, width: legend ? 1.5 : 1.0 },
  };
  if (markers) Object.assign(t, { mode: "lines+markers", marker: { color, size } });
  return t;
}

// A group's min-max band under its mean, whose hover reads both (traces.py's band_traces
// and spread): the min as an unseen line, the max filled down to it.
function banded(line, index, x, mean, hover) {
  const kept = index.filter((i) => Number.isFinite(x[i]));
  const finite = (v) => (Number.isFinite(v) ? v : null);
  const common = {
    x: mean.x, name: line.label, type: "scatter", mode: "lines", legendgroup: line.label,
    showlegend: false, hoverinfo: "skip", meta: "band", line: { color: line.color, width: 0 },
  };
  return [
    { ...common, y: kept.map((i) => finite(line.low[i])) },
    { ...common, y: kept.map((i) => finite(line.high[i])), fill: "tonexty", fillcolor: line.band },
    { ...mean, customdata: kept.map((i) => [finite(line.low[i]), finite(line.high[i])]),
      hovertemplate: hover },
  ];
}

// A window's traces for the view: each line raw (faint under its smoothed curve when
// smoothed), at most the viewer's budget of points each, every point of a zoom that fits.
function windowTraces(win, view, settings) {
  const smoothing = settings.smoothing > 0 && !win.crowded;
  const perTrace = smoothing ? Math.max(view.minPoints, Math.floor(view.maxPoints / 2))
    : view.maxPoints;
  // A comparison shares its window's points among its traces (plotmessage.trace_budget).
  const count = win.decoded.reduce(
    (n, line) => n + 1 + (smoothing && line.values.length >= view.sparsePoints ? 1 : 0)
      + (line.band ? 2 : 0), 0);
  const budget = win.windowPoints === null || count <= 0 ? perTrace
    : Math.max(view.minPoints, Math.min(perTrace, Math.floor(win.windowPoints / count)));
  const traces = [];
  for (const line of win.decoded) {
    const x = xOf(line, settings.axis, win.unitSeconds);
    const chosen = win.zoom ? pick(x, win.zoom[0], win.zoom[1], settings.axis !== "step") : null;
    const sparse = line.values.length < view.sparsePoints;
    const smooth = smoothing && !sparse;
    const raw = sample(line.values, chosen, budget);
    const own = trace(line, raw, x, line.values, smooth ? line.faint : line.color, !smooth,
      sparse, view.markerSize);
    traces.push(...(line.band ? banded(line, raw, x, own, view.bandHover) : [own]));
    if (smooth) {
      if (!line.smooth || line.smooth.weight !== settings.smoothing) {
        line.smooth = { weight: settings.smoothing, values: smoothed(line.values, settings.smoothing) };
      }
      const at = sample(line.smooth.values, chosen, budget);
      traces.push({ ...trace(line, at, x, line.smooth.values, line.color, true, false), meta: "smoothed" });
    }
  }
  return traces;
}

function windowLayout(win, settings) {
  const layout = structuredClone(win.layouts[settings.axis]);
  layout.height = win.height;
  layout.autosize = true;
  layout.yaxis.type = settings.logY ? "log" : "linear";
  layout.showlegend = !win.crowded; // a hundred names under a plot: a hover names a run
  if (settings.logY) delete layout.yaxis.rangemode;
  if (win.zoom) Object.assign(layout.xaxis, { range: win.zoom.slice(), autorange: false });
  return layout;
}

const PLOT_CONFIG = { responsive: true, displaylogo: false };

async function drawWindow(win, view, settings, packed) {
  await Promise.all(win.lines.map((line) => decodeLine(line, packed, settings.axis)));
  win.decoded = win.lines;
  win.drawing = true;
  try {
    await Plotly.react(win.div, windowTraces(win, view, settings), windowLayout(win, settings),
      PLOT_CONFIG);
  } finally {
    win.drawing = false;
  }
  if (!win.following) { // Plotly's .on exists once the div is a plot
    win.following = true;
    followZoom(win, view, settings, packed);
  }
}

// A plotly_relayout's x range, in the drawn x's terms (a date axis reports text, read as UTC,
// which is what localMs drew); null for the whole run; undefined when the x axis is untouched.
function rangeOf(event) {
  if (event["xaxis.autorange"]) return null;
  const range = event["xaxis.range"] ||
    ("xaxis.range[0]" in event ? [event["xaxis.range[0]"], event["xaxis.range[1]"]] : undefined);
  if (!range) return undefined;
  const ends = range.map((v) => (typeof v === "number" ? v : Date.parse(`${String(v).replace(" ", "T")}Z`)));
  return ends.every(Number.isFinite) && ends[0] !== ends[1] ? ends.sort((a, b) => a - b) : undefined;
}

// ``settings`` is the page's one object, changed in place by its controls.
function followZoom(win, view, settings, packed) {
  win.div.on("plotly_relayout", (event) => {
    if (win.drawing) return;
    const zoom = rangeOf(event);
    if (zoom === undefined) return;
    win.zoom = zoom;
    drawWindow(win, view, settings, packed);
  });
}
