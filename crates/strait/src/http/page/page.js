// Strait's status page: draws every flow from /api/overview and one page of a flow's
// partitions from /api/partitions, then does it again every REFRESH_MS. No library: the
// plots are SVG polylines. Text from the process (topic names, errors) only ever goes in
// through textContent.
"use strict";

const REFRESH_MS = 2000;
const PAGE_SIZE = 50;
const SVG = "http://www.w3.org/2000/svg";

const view = { flow: 0, topic: "", page: 0, matched: 0 };
let refreshes = 0;

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function count(n) {
  if (n === null || n === undefined) return "–";
  const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  for (const [size, unit] of units) {
    if (Math.abs(n) >= size) return (n / size).toFixed(n / size >= 100 ? 0 : 1) + unit;
  }
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function bytes(n) {
  const units = [[2 ** 40, "TiB"], [2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]];
  for (const [size, unit] of units) {
    if (n >= size) return (n / size).toFixed(1) + " " + unit;
  }
  return Math.round(n) + " B";
}

function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + " s";
  if (s < 3600) return (s / 60).toFixed(1) + " min";
  return (s / 3600).toFixed(1) + " h";
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString();
}

// A small plot of one series, newest on the right, over the samples' span (at least a minute,
// at most the window the process keeps).
function plot(title, samples, key, format, now, keptMs) {
  const since = samples.length > 0 ? now - samples[0].time_ms : 0;
  const windowMs = Math.min(keptMs, Math.max(60000, since));
  const width = 320, height = 80, top = 12, bottom = 4;
  const values = samples.map((s) => s[key]);
  const max = Math.max(0, ...values);
  const x = (t) => (width * (t - (now - windowMs))) / windowMs;
  const y = (v) => height - bottom - (max > 0 ? ((height - top - bottom) * v) / max : 0);
  const image = svg("svg", {
    width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": title, "data-samples": samples.length, "data-key": key,
  });
  if (samples.length > 0) {
    const points = samples.map((s) => `${x(s.time_ms).toFixed(1)},${y(s[key]).toFixed(1)}`);
    const first = x(samples[0].time_ms).toFixed(1), last = x(samples[samples.length - 1].time_ms).toFixed(1);
    image.append(svg("polygon", { points: `${first},${height - bottom} ${points.join(" ")} ${last},${height - bottom}` }));
    image.append(svg("polyline", { points: points.join(" ") }));
  }
  const label = svg("text", { x: 4, y: 10 });
  label.textContent = "max " + format(max);
  image.append(label);
  const span = svg("text", { x: width - 4, y: 10, "text-anchor": "end" });
  span.textContent = "last " + Math.round(windowMs / 60000) + " min";
  image.append(span);
  const latest = values.length > 0 ? format(values[values.length - 1]) : "–";
  return el("figure", { class: "plot" }, el("figcaption", {}, `${title}: ${latest}`), image);
}

function number(label, value, bad) {
  return el("div", {}, el("dt", {}, label), el("dd", bad ? { class: "bad" } : {}, value));
}

// Restarts of the data path's fetchers and producers, and those waiting for theirs.
function workers(w) {
  const restarts = Object.values(w.restarts).reduce((a, b) => a + b, 0);
  const waiting = Object.keys(w.restarting);
  const text = count(restarts) + " restarts" + (waiting.length > 0 ? " · restarting: " + waiting.join(", ") : "");
  return number("worker restarts", text, waiting.length > 0);
}

function flowCard(flow, overview) {
  const s = flow.summary;
  const latest = flow.samples.length > 0 ? flow.samples[flow.samples.length - 1] : null;
  const heartbeat = flow.last_heartbeat_ms ? seconds((overview.now_ms - flow.last_heartbeat_ms) / 1000) + " ago" : "none yet";
  const card = el("article", {
    class: "flow", "data-flow": flow.flow, "data-state": flow.state,
    "data-lag-records": s.lag_records, "data-records": flow.records,
  },
    el("h2", {}, flow.flow.replace("->", " → "), el("span", { class: "state " + flow.state }, flow.state)),
    el("dl", { class: "numbers" },
      number("throughput", latest ? count(latest.records_per_second) + " rec/s · " + bytes(latest.bytes_per_second) + "/s" : "–"),
      number("lag", count(s.lag_records) + " records · " + seconds(s.lag_seconds)),
      number("mirrored", count(flow.records) + " records · " + bytes(flow.bytes)),
      number("partitions", `${s.partitions} (${s.failing} failing, ${s.stopped} stopped)`, s.failing + s.stopped > 0),
      number("gaps", count(flow.gap_records) + " records", flow.gap_records > 0),
      number("unreadable", count(flow.unreadable_records) + " stored records skipped", flow.unreadable_records > 0),
      number("found at restart", count(flow.resume_found_records) + " records · " + count(flow.resume_fallbacks) + " fallbacks", flow.resume_fallbacks > 0),
      number("recreated source topics", count(flow.source_recreations) + " partitions restarted", flow.source_recreations > 0),
      number("last heartbeat", heartbeat),
      workers(flow.workers)),
    el("div", { class: "plots" },
      plot("records/s", flow.samples, "records_per_second", count, overview.now_ms, overview.window_ms),
      plot("lag (records)", flow.samples, "lag_records", count, overview.now_ms, overview.window_ms),
      plot("lag (seconds)", flow.samples, "lag_seconds", seconds, overview.now_ms, overview.window_ms)));
  const tasks = Object.entries(flow.tasks || {});
  if (tasks.length > 0) {
    card.append(el("div", { class: "tasks" }, ...tasks.map(([name, task]) =>
      el("span", task.state === "failing" ? { class: "bad" } : {},
        `${name}: ${task.state}` + (task.last_error ? ` (${task.last_error})` : "")))));
  }
  const waiting = flow.waiting_topics || [];
  if (waiting.length > 0) {
    card.append(el("div", { class: "tasks waiting" }, ...waiting.map((t) =>
      el("span", { class: "bad" }, `topic ${t.topic} waiting (${t.reason}, ${t.attempts} attempts): ${t.last_error}`))));
  }
  if (flow.last_error) card.append(el("p", { class: "bad" }, "last error: " + flow.last_error));
  const errors = flow.recent_errors.slice().reverse();
  const details = el("details", { class: "errors" }, el("summary", {}, `errors (${errors.length})`));
  if (errors.length > 0) {
    details.append(el("table", {}, el("tbody", {}, ...errors.map((e) =>
      el("tr", {}, el("td", {}, clock(e.time_ms)), el("td", {}, e.scope), el("td", { class: "error" }, e.message))))));
  }
  card.append(details);
  return card;
}

function drawFlows(overview) {
  const open = new Set([...document.querySelectorAll(".flow")]
    .filter((card) => card.querySelector("details").open).map((card) => card.dataset.flow));
  const cards = overview.flows.map((flow) => flowCard(flow, overview));
  for (const card of cards) {
    if (open.has(card.dataset.flow)) card.querySelector("details").open = true;
  }
  document.getElementById("flows").replaceChildren(...cards);
  const select = document.getElementById("flow-select");
  if (select.options.length !== overview.flows.length) {
    select.replaceChildren(...overview.flows.map((f) => el("option", { value: f.index }, f.flow)));
    select.value = String(view.flow);
  }
  const buffer = overview.buffer;
  document.getElementById("buffer").textContent = `buffer ${bytes(buffer.bytes)} of ${bytes(buffer.limit_bytes)}`;
}

function cell(value, numeric) {
  return el("td", numeric ? { class: "num" } : {}, value === null || value === undefined ? "–" : String(value));
}

async function drawPartitions() {
  const query = new URLSearchParams({ flow: view.flow, topic: view.topic, page: view.page, size: PAGE_SIZE });
  const answer = await (await fetch("/api/partitions?" + query)).json();
  if (answer.error) throw new Error(answer.error);
  view.matched = answer.matched;
  const rows = answer.partitions.map((p) => el("tr", { "data-state": p.state },
    cell(p.topic), cell(p.partition, true), cell(p.remote_topic), cell(p.state),
    cell(p.position, true), cell(p.source_end, true), cell(p.lag_records, true),
    cell(p.lag_seconds === null ? null : p.lag_seconds.toFixed(1), true),
    cell(p.records, true), cell(p.gap_records, true),
    el("td", { class: "error" }, p.last_error || "")));
  document.querySelector("#partitions tbody").replaceChildren(...rows);
  const pages = Math.max(1, Math.ceil(answer.matched / PAGE_SIZE));
  const shown = answer.matched === answer.total ? `${answer.total} partitions` : `${answer.matched} of ${answer.total} partitions`;
  document.getElementById("page-info").textContent = `page ${view.page + 1} of ${pages} · ${shown}`;
  document.getElementById("prev").disabled = view.page === 0;
  document.getElementById("next").disabled = view.page + 1 >= pages;
}

let timer = null;

async function refresh() {
  clearTimeout(timer);
  try {
    const overview = await (await fetch("/api/overview")).json();
    drawFlows(overview);
    await drawPartitions();
    refreshes += 1;
    document.body.dataset.refreshes = refreshes;
    document.body.classList.remove("stale");
    document.getElementById("updated").textContent = "updated " + clock(overview.now_ms);
    if (window.straitFirstRender === undefined) window.straitFirstRender = performance.now();
  } catch (error) {
    document.body.classList.add("stale");
    document.getElementById("updated").textContent = "cannot reach Strait: " + error.message;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

document.getElementById("flow-select").addEventListener("change", (event) => {
  view.flow = Number(event.target.value);
  view.page = 0;
  refresh();
});
document.getElementById("topic-filter").addEventListener("input", (event) => {
  view.topic = event.target.value;
  view.page = 0;
  refresh();
});
document.getElementById("prev").addEventListener("click", () => {
  view.page = Math.max(0, view.page - 1);
  refresh();
});
document.getElementById("next").addEventListener("click", () => {
  view.page += 1;
  refresh();
});
refresh();
