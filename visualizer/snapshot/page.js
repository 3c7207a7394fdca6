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

// The table shows PAGE_ROWS rows at a time, as the live runs table pages through 100:
// a sweep's 10,000 rows are sorted and filtered as data, and only a page of them is built.
const PAGE_ROWS = 100;

function buildTable() {
  const { columns, rows } = DATA.table;
  const table = document.getElementById("runs");
  const head = document.createElement("tr");
  const body = table.tBodies[0];
  const all = rows.map((values, r) => ({
    values, section: DATA.table.sections[r], node: null, fields: rowFields(columns, values),
  }));
  const view = { rows: all, page: 0, column: -1, descending: false, keep: () => true };
  const show = () => showRows(body, columns, view);
  columns.forEach((name, c) => {
    const th = el("th", name);
    th.title = name;
    th.addEventListener("click", () => {
      view.descending = view.column === c ? !view.descending : false;
      view.column = c;
      head.querySelectorAll("th").forEach((cell) => cell.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", view.descending ? "descending" : "ascending");
      sortRows(all, c, view.descending);
      view.rows = all.filter((row) => view.keep(row.fields));
      show();
    });
    head.appendChild(th);
  });
  table.tHead.appendChild(head);
  const filter = document.getElementById("filter");
  const problem = document.getElementById("filter-error");
  filter.addEventListener("input", () => {
    try {
      view.keep = runFilter(filter.value);
      problem.hidden = true;
    } catch (err) { // a bad expression: its one line, as text; the rows whose names hold it
      view.keep = nameHolds(filter.value);
      problem.textContent = err.message;
      problem.hidden = false;
    }
    view.rows = all.filter((row) => view.keep(row.fields));
    view.page = 0;
    show();
  });
  for (const [id, step] of [["previous", -1], ["next", 1]]) {
    document.getElementById(id).addEventListener("click", () => { view.page += step; show(); });
  }
  show();
}

// What the filter language (filter.js) looks at of a row: its name, state, start, config and
// summary columns; an empty cell is no value.
function rowFields(columns, values) {
  const fields = { name: values[0], state: MISSING, created_at: MISSING, config: {}, summary: {} };
  columns.forEach((column, c) => {
    const value = values[c];
    if (value === null || value === undefined) return;
    if (column === "state") fields.state = value;
    else if (column === "start") fields.created_at = value;
    else if (column.startsWith("config.")) fields.config[column.slice(7)] = value;
    else if (column.startsWith("summary.")) fields.summary[column.slice(8)] = value;
  });
  return fields;
}

function showRows(body, columns, view) {
  const pages = Math.max(1, Math.ceil(view.rows.length / PAGE_ROWS));
  view.page = Math.min(Math.max(view.page, 0), pages - 1);
  const first = view.page * PAGE_ROWS, page = view.rows.slice(first, first + PAGE_ROWS);
  body.replaceChildren(...page.map((row) => row.node || (row.node = tableRow(columns, row))));
  const total = DATA.table.rows.length;
  document.getElementById("count").textContent = view.rows.length > PAGE_ROWS ?
    `${first + 1}-${first + page.length} of ${view.rows.length} (of ${total} runs)` :
    `${view.rows.length} of ${total} run${total === 1 ? "" : "s"}`;
  document.getElementById("previous").hidden = document.getElementById("next").hidden = pages === 1;
  document.getElementById("previous").disabled = view.page === 0;
  document.getElementById("next").disabled = view.page === pages - 1;
}

// ``row.section``: the index of the run's section, null for a run the file holds no plots of.
function tableRow(columns, row) {
  const tr = document.createElement("tr");
  row.values.forEach((value, c) => {
    const td = el("td", null, typeof value === "number" ? "num" : "");
    if (c === 0 && row.section !== null) {
      const link = el("a", value);
      link.href = `#run-${row.section}`; // the page's own anchor, never the name
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

function sortRows(rows, column, descending) {
  rows.sort((x, y) => {
    const a = x.values[column], b = y.values[column];
    if (a === null || a === undefined || b === null || b === undefined) return compareCells(a, b);
    return descending ? compareCells(b, a) : compareCells(a, b);
  });
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

// The alerts the run's writer sent (its event, words and when), as text.
function alertList(alerts) {
  const box = el("div", null, "alerts");
  box.appendChild(el("h3", "Alerts sent"));
  for (const alert of alerts) {
    const when = new Date(alert.time * 1000).toLocaleString();
    box.appendChild(el("div", `${when}: ${alert.event}: ${alert.detail}`, "alert"));
  }
  return box;
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
  if (run.alerts.length) side.appendChild(alertList(run.alerts));
  const plots = plotGrid(run.windows);
  if (!run.windows.length) plots.appendChild(el("div", "no series logged", "empty"));
  body.append(side, plots);
  card.appendChild(body);
  if (run.images.length || run.imagesLeftOut) card.appendChild(imageStrip(run));
  return card;
}

// --- the view controls ------------------------------------------------------------------

// Past LAZY_WINDOWS plot windows (a sweep's comparison and a hundred runs' sections), a
// run's windows are drawn once scrolled near, the comparison's at once.
const LAZY_WINDOWS = 24;
let drawing = Promise.resolve(); // one draw at a time, in the order asked for

function queued(task) {
  drawing = drawing.then(task).catch((err) => console.error(err));
  return drawing;
}

function markOnce(name) {
  if (!performance.getEntriesByName(name).length) performance.mark(name);
}

async function drawWindows(list) {
  for (const win of list) {
    await drawWindow(win, DATA.view, settings, DATA.series);
    win.drawn = true;
    markOnce("snapshot:first-plot");
    await new Promise((done) => requestAnimationFrame(done)); // the page stays responsive
  }
}

function drawAll() {
  return queued(async () => {
    await drawWindows(windows.filter((win) => win.wanted));
    markOnce("snapshot:plots-drawn");
    const parcoords = DATA.comparison && DATA.comparison.parcoords;
    if (parcoords && !parcoords.drawn) { // WebGL: seconds without a GPU, so after the lines
      parcoords.drawn = true;
      await Plotly.react(parcoords.div, parcoords.data, parcoords.layout, { displaylogo: false });
    }
    markOnce("snapshot:drawn");
  });
}

function drawWhenSeen(lazy) {
  const seen = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      seen.unobserve(entry.target);
      const win = lazy.find((w) => w.div === entry.target);
      win.wanted = true;
      queued(() => drawWindows([win]));
    }
  }, { rootMargin: "600px" });
  lazy.forEach((win) => seen.observe(win.div));
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
  const compared = windows.length;
  runs.forEach((run, index) => sections.appendChild(runSection(run, index)));
  const lazy = windows.length > LAZY_WINDOWS ? windows.slice(compared) : [];
  windows.forEach((win) => { win.wanted = !lazy.includes(win); });
  drawAll();
  drawWhenSeen(lazy);
}

main();
