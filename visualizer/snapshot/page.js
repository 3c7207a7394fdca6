"use strict";
// The snapshot page: the runs table, a section a run (config, summary, plot windows) and
// the view controls. Every text from the store goes in through textContent, never as markup.

// The page marks its milestones (performance.mark): read, first plot drawn, every plot drawn.
performance.mark("snapshot:start");
const DATA = JSON.parse(document.getElementById("snapshot-data").textContent);
performance.mark("snapshot:parsed");
const STATES = ["running", "finished", "failed", "crashed", "unreadable"];
const settings = {
  smoothing: DATA.view.smoothing, axis: "step", logY: false,
};
const windows = [];

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function formatNumber(value) {
  if (Number.isInteger(value)) return String(value);
  const abs = Math.abs(value);
  return abs !== 0 && (abs < 1e-3 || abs >= 1e6) ? value.toExponential(4)
    : String(Number(value.toPrecision(6)));
}

function formatDuration(seconds) {
  const s = Math.round(seconds), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return h ? `${h}h ${String(m).padStart(2, "0")}m` : m ? `${m}m ${String(s % 60).padStart(2, "0")}s`
    : `${s}s`;
}

function shown(column, value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number") {
    if (column === "start") return new Date(value * 1000).toLocaleString();
    if (column === "duration") return formatDuration(value);
    return formatNumber(value);
  }
  return String(value);
}

// --- the runs table ----------------------------------------------------------------

function buildTable() {
  const { columns, rows } = DATA.table;
  const table = document.getElementById("runs");
  const head = document.createElement("tr");
  const order = { column: -1, descending: false };
  columns.forEach((name, c) => {
    const th = el("th", name);
    th.title = name;
    th.addEventListener("click", () => {
      order.descending = order.column === c ? !order.descending : false;
      order.column = c;
      head.querySelectorAll("th").forEach((cell) => cell.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", order.descending ? "descending" : "ascending");
      sortRows(body, c, order.descending);
    });
    head.appendChild(th);
  });
  table.tHead.appendChild(head);
  const body = table.tBodies[0];
  rows.forEach((row, r) => body.appendChild(tableRow(columns, row, DATA.table.sections[r])));
  const filter = document.getElementById("filter");
  filter.addEventListener("input", () => filterRows(body, filter.value));
  filterRows(body, "");
}

// ``section``: the index of the run's section, null for a run the file holds no plots of.
function tableRow(columns, row, section) {
  const tr = document.createElement("tr");
  tr.values = row;
  tr.text = row.map((v, c) => shown(columns[c], v)).join("\u0000").toLowerCase();
  row.forEach((value, c) => {
    const td = el("td", null, typeof value === "number" ? "num" : "");
    if (c === 0 && section !== null) {
      const link = el("a", value);
      link.href = `#run-${section}`; // the page's own anchor, never the name
      td.appendChild(link);
    } else {
      td.textContent = shown(columns[c], value);
    }
    td.title = td.textContent;
    tr.appendChild(td);
  });
  return tr;
}

function compareCells(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1; // empty cells last either way
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

function sortRows(body, column, descending) {
  const rows = Array.from(body.rows);
  rows.sort((x, y) => {
    const a = x.values[column], b = y.values[column];
    if (a === null || a === undefined || b === null || b === undefined) return compareCells(a, b);
    return descending ? compareCells(b, a) : compareCells(a, b);
  });
  rows.forEach((row) => body.appendChild(row));
}

function filterRows(body, text) {
  const wanted = text.trim().toLowerCase();
  let shownRows = 0;
  for (const row of body.rows) {
    row.hidden = wanted !== "" && !row.text.includes(wanted);
    shownRows += row.hidden ? 0 : 1;
  }
  document.getElementById("count").textContent =
    `${shownRows} of ${body.rows.length} run${body.rows.length === 1 ? "" : "s"}`;
}

// --- a run's section ------------------------------------------------------------------

function keyValues(title, values) {
  const box = el("div");
  box.appendChild(el("h3", title));
  const keys = Object.keys(values);
  if (!keys.length) {
    box.appendChild(el("div", "none", "empty"));
    return box;
  }
  const table = el("table", null, "kv");
  for (const key of keys) {
    const tr = document.createElement("tr");
    const name = el("td", key), value = el("td", shown(key, values[key]));
    name.title = key;
    value.title = value.textContent;
    tr.append(name, value);
    table.appendChild(tr);
  }
  box.appendChild(table);
  return box;
}

function plotGrid(wins) {
  const plots = el("div", null, "plots");
  for (const win of wins) {
    win.div = el("div", null, "plot");
    win.div.style.minHeight = `${win.height}px`;
    win.zoom = null;
    plots.appendChild(win.div);
    windows.push(win);
  }
  return plots;
}

// The runs overlaid: a window a series, a line a run, each run in one color throughout.
function comparisonSection(comparison) {
  const card = el("section", null, "card run");
  card.id = "comparison";
  const head = el("div", null, "run-head");
  const count = comparison.of > comparison.compared ?
    `the ${comparison.compared} most recently updated of ${comparison.of} runs` : `${comparison.of} runs`;
  head.append(el("h2", "Comparison"), el("span", count, "meta"));
  card.appendChild(head);
  if (comparison.leftOut) {
    card.appendChild(el("div", `${comparison.leftOut} more series not drawn here; each run's own windows below have them`, "note"));
  }
  const body = el("div", null, "compare-body");
  if (comparison.parcoords) {
    comparison.parcoords.div = el("div", null, "plot parcoords");
    body.appendChild(comparison.parcoords.div);
  }
  body.appendChild(plotGrid(comparison.windows));
  card.appendChild(body);
  return card;
}

// The run's newest image of each tag as a thumbnail; a click shows it at its own size.
function imageStrip(run) {
  const strip = el("div", null, "images");
  for (const image of run.images) {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(image.png)) continue; // base64 of a PNG, nothing else
    const figure = el("figure", null, "thumb");
    const img = document.createElement("img");
    img.src = `data:image/png;base64,${image.png}`;
    img.alt = image.title;
    img.width = image.width;
    img.height = image.height;
    img.addEventListener("click", () => figure.classList.toggle("whole"));
    const caption = el("figcaption");
    caption.append(el("b", image.title), el("span", ` step ${image.step}`, "meta"));
    if (image.captions.length) caption.appendChild(el("div", image.captions.join(" \u00b7 ")));
    figure.append(img, caption);
    strip.appendChild(figure);
  }
  if (run.imagesLeftOut) {
    strip.appendChild(el("div", `${run.imagesLeftOut} more images over the file's size cap: ` +
      "python -m visualizer export --kind image has them", "note"));
  }
  return strip;
}

function runSection(run, index) {
  const card = el("section", null, "card run");
  card.id = `run-${index}`;
  const head = el("div", null, "run-head");
  const state = el("span", run.state, "state");
  if (STATES.includes(run.state)) state.classList.add(run.state);
  head.append(el("h2", run.name), state);
  if (run.step !== null) head.appendChild(el("span", `step ${run.step}`, "meta"));
  card.appendChild(head);
  if (run.error) card.appendChild(el("div", `can not read this run: ${run.error}`, "error"));
  if (run.note) card.appendChild(el("div", run.note, "note"));
  const body = el("div", null, "run-body");
  const side = el("div", null, "side");
  side.append(keyValues("Config", run.config), keyValues("Summary", run.summary));
  const plots = plotGrid(run.windows);
  if (!run.windows.length) plots.appendChild(el("div", "no series logged", "empty"));
  body.append(side, plots);
  card.appendChild(body);
  if (run.images.length || run.imagesLeftOut) card.appendChild(imageStrip(run));
  return card;
}

// --- the view controls ------------------------------------------------------------------

async function drawAll() {
  for (const win of windows) {
    await drawWindow(win, DATA.view, settings, DATA.series);
    if (!performance.getEntriesByName("snapshot:first-plot").length) {
      performance.mark("snapshot:first-plot");
    }
    await new Promise((done) => requestAnimationFrame(done)); // the page stays responsive
  }
  if (!performance.getEntriesByName("snapshot:drawn").length) performance.mark("snapshot:drawn");
}

function buildControls() {
  const smoothing = document.getElementById("smoothing");
  const value = document.getElementById("smoothing-value");
  const axis = document.getElementById("x-axis");
  const scale = document.getElementById("y-scale");
  for (const [key, name] of Object.entries(DATA.view.axes)) {
    const option = el("option", name);
    option.value = key;
    axis.appendChild(option);
  }
  smoothing.value = String(settings.smoothing);
  value.textContent = settings.smoothing.toFixed(2);
  smoothing.addEventListener("input", () => {
    settings.smoothing = Number(smoothing.value);
    value.textContent = settings.smoothing.toFixed(2);
  });
  smoothing.addEventListener("change", drawAll);
  axis.addEventListener("change", () => {
    settings.axis = axis.value;
    windows.forEach((win) => { win.zoom = null; }); // a new axis shows the whole run
    drawAll();
  });
  scale.addEventListener("change", () => { settings.logY = scale.value === "log"; drawAll(); });
}

function main() {
  const runs = DATA.runs, count = DATA.table.rows.length;
  const title = count === 1 && runs.length ? runs[0].name : `${count} runs`;
  document.getElementById("title").textContent = `${title} \u00b7 ${DATA.source}`;
  document.title = `${title}: run snapshot`;
  document.getElementById("made").textContent =
    `snapshot of ${new Date(DATA.made * 1000).toLocaleString()}`;
  buildTable();
  buildControls();
  const sections = document.getElementById("run-sections");
  if (runs.length < count) {
    sections.appendChild(el("div", `${count - runs.length} of the ${count} runs are rows of the ` +
      "table only: a sweep's file holds the plots of the compared runs (--compare N, --runs REGEX)", "note"));
  }
  if (DATA.comparison) sections.appendChild(comparisonSection(DATA.comparison));
  const parcoords = DATA.comparison && DATA.comparison.parcoords;
  if (parcoords) Plotly.react(parcoords.div, parcoords.data, parcoords.layout, { displaylogo: false });
  runs.forEach((run, index) => sections.appendChild(runSection(run, index)));
  drawAll();
}

main();
