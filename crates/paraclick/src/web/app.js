"use strict";
// Everything here comes from the router's handlers, read through the
// control protocol by the server (/api/read, /api/write).
const POLL_MS = 500;
// The per-run secret every write must carry (X-Paraclick-Token). It is in
// this page only, which no other site can read (same-origin policy; the
// server checks Host, so DNS rebinding cannot make it same-origin).
const TOKEN = document.querySelector('meta[name="paraclick-token"]').content;
const STATS = ["count", "length", "capacity", "drops"];
let elements = [];          // {name, cls, config}
let edges = [];             // {from, fp, to, tp}
let handlers = {};          // name -> set of readable handler names
let collapsed = new Set();  // compound prefixes shown as one node
let last = {};              // handler -> [value, time] for rates
let lastThreads = null;
let swaps = null;           // hot swaps seen: the graph is read again after one

async function api(path, opts) {
  const r = await fetch(path, opts);
  if (!r.ok) throw new Error(r.status + " " + r.statusText);
  return r.json();
}
async function readMany(hs) {
  if (!hs.length) return {};
  return api("/api/read?" + hs.map(h => "h=" + encodeURIComponent(h)).join("&"));
}

function parseFlat(text) {
  const els = [], es = [];
  // The last element of the chain being read: a line `-> [P] NAME`
  // connects its output 0 on.
  let last = null;
  for (let line of text.split("\n")) {
    line = line.trim().replace(/;$/, "");
    if (!line) continue;
    let m = line.match(/^(\S+) :: ([A-Za-z0-9_@]+)(?:\((.*)\))?$/s);
    if (m) { els.push({name: m[1], cls: m[2], config: m[3] || ""}); continue; }
    m = line.match(/^-> (?:\[(\d+)\] )?(\S+)$/);
    if (m && last !== null) {
      es.push({from: last, fp: 0, to: m[2], tp: +(m[1] || 0)});
      last = m[2];
      continue;
    }
    m = line.match(/^(\S+)(?: \[(\d+)\])? -> (?:\[(\d+)\] )?(\S+)$/);
    if (m) { es.push({from: m[1], fp: +(m[2] || 0), to: m[4], tp: +(m[3] || 0)}); last = m[4]; }
  }
  return [els, es];
}

function prefixes(name) {
  const parts = name.split("/"), out = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join("/"));
  return out;
}
// The node an element is drawn as: itself, or its outermost collapsed compound.
function shown(name) {
  for (const p of prefixes(name)) if (collapsed.has(p)) return p;
  return name;
}

function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
function idOf(kind, name) { return kind + "-" + name.replace(/[^A-Za-z0-9_-]/g, "_"); }

function layout() {
  const nodes = [], seen = new Set();
  for (const e of elements) {
    const n = shown(e.name);
    if (seen.has(n)) continue;
    seen.add(n);
    nodes.push(n === e.name ? {id: n, el: e} : {id: n, group: true,
      size: elements.filter(x => shown(x.name) === n).length});
  }
  const links = [];
  for (const e of edges) {
    const a = shown(e.from), b = shown(e.to);
    if (a !== b && !links.some(l => l.a === a && l.b === b)) links.push({a, b});
  }
  // Layers: longest path from the sources (bounded, so cycles end).
  const layer = {};
  for (const n of nodes) layer[n.id] = 0;
  for (let it = 0; it < nodes.length; it++) {
    let changed = false;
    for (const l of links) if (layer[l.b] < layer[l.a] + 1 && layer[l.a] + 1 < nodes.length) { layer[l.b] = layer[l.a] + 1; changed = true; }
    if (!changed) break;
  }
  const cols = {};
  for (const n of nodes) (cols[layer[n.id]] = cols[layer[n.id]] || []).push(n);
  const W = 150, H = 62, GX = 40, GY = 18, pos = {};
  let maxRow = 0, maxCol = 0;
  for (const [c, ns] of Object.entries(cols)) {
    ns.forEach((n, r) => { pos[n.id] = {x: 10 + c * (W + GX), y: 10 + r * (H + GY)}; maxRow = Math.max(maxRow, r); });
    maxCol = Math.max(maxCol, +c);
  }
  const svg = document.getElementById("graph");
  svg.setAttribute("width", 20 + (maxCol + 1) * (W + GX));
  svg.setAttribute("height", 20 + (maxRow + 1) * (H + GY));
  let s = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#90a4ae"/></marker></defs>';
  for (const l of links) {
    const a = pos[l.a], b = pos[l.b];
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    s += `<path class="edge" d="M${x1},${y1} C${x1 + 25},${y1} ${x2 - 25},${y2} ${x2},${y2}"/>`;
  }
  for (const n of nodes) {
    const p = pos[n.id];
    if (n.group) {
      s += `<g class="node group" data-group="${esc(n.id)}" transform="translate(${p.x},${p.y})"><rect width="${W}" height="${H}" rx="4"/>` +
        `<text class="name" x="6" y="16">${esc(n.id)}/ ▸</text><text class="cls" x="6" y="32">${n.size} elements (click)</text></g>`;
    } else {
      const q = /Queue$/.test(n.el.cls) ? " queue" : "";
      s += `<g class="node${q}" data-el="${esc(n.id)}" transform="translate(${p.x},${p.y})"><rect width="${W}" height="${H}" rx="4"/>` +
        `<text class="name" x="6" y="15">${esc(n.id.length > 22 ? "…" + n.id.slice(-21) : n.id)}</text>` +
        `<text class="cls" x="6" y="29">${esc(n.el.cls)}</text>` +
        `<text class="stat" x="6" y="44" id="${idOf("count", n.id)}"></text>` +
        `<text class="stat" x="6" y="57" id="${idOf("rate", n.id)}"></text></g>`;
    }
  }
  svg.innerHTML = s;
  for (const g of svg.querySelectorAll("[data-group]")) g.onclick = () => { collapsed.delete(g.dataset.group); drawCompounds(); layout(); };
}

function drawCompounds() {
  const all = new Set();
  for (const e of elements) for (const p of prefixes(e.name)) all.add(p);
  const box = document.getElementById("compounds");
  box.innerHTML = all.size ? "Compounds (collapse): " + [...all].sort().map(p =>
    `<label><input type="checkbox" data-c="${esc(p)}"${collapsed.has(p) ? " checked" : ""}> ${esc(p)}</label>`).join("") : "";
  for (const c of box.querySelectorAll("input")) c.onchange = () => {
    if (c.checked) collapsed.add(c.dataset.c); else collapsed.delete(c.dataset.c);
    layout();
  };
}

function fmtRate(x) { return x >= 1e6 ? (x / 1e6).toFixed(2) + " Mp/s" : x >= 1e3 ? (x / 1e3).toFixed(1) + " kp/s" : x.toFixed(0) + " p/s"; }

async function poll() {
  const want = ["threads", "hotswaps"];
  for (const e of elements) for (const h of STATS) if (handlers[e.name] && handlers[e.name].has(h)) want.push(e.name + "." + h);
  let r;
  try { r = await readMany(want); } catch (err) { document.getElementById("status").textContent = "disconnected: " + err; return; }
  const now = performance.now() / 1000;
  const val = h => r[h] && r[h].ok ? r[h].value.trim() : null;
  const sw = val("hotswaps");
  if (sw !== null) {
    const n = sw.split("\n")[0];
    if (swaps !== null && n !== swaps) { swaps = n; last = {}; await load(); return; }
    swaps = n;
  }
  for (const e of elements) {
    const c = val(e.name + ".count"), ln = val(e.name + ".length");
    const t1 = document.getElementById(idOf("count", e.name)), t2 = document.getElementById(idOf("rate", e.name));
    if (c !== null) {
      if (t1) t1.textContent = c;
      const prev = last[e.name];
      if (prev && t2) t2.textContent = fmtRate(Math.max(0, (+c - prev[0]) / (now - prev[1])));
      last[e.name] = [+c, now];
    } else if (ln !== null && t1) {
      t1.textContent = "len " + ln + " / " + (val(e.name + ".capacity") || "?");
      if (t2) t2.textContent = "drops " + (val(e.name + ".drops") || 0);
    }
  }
  // Queues.
  const qb = document.querySelector("#queues tbody");
  let qs = "";
  for (const e of elements) {
    const ln = val(e.name + ".length"), cap = val(e.name + ".capacity");
    if (ln === null || cap === null) continue;
    const pct = Math.min(100, 100 * (+ln) / Math.max(1, +cap));
    qs += `<tr id="${idOf("queue", e.name)}"><td>${esc(e.name)}</td><td><span class="bar"><span data-pct="${pct}"></span></span></td>` +
      `<td>${esc(ln)} / ${esc(cap)}</td><td>${esc(val(e.name + ".drops") || 0)}</td></tr>`;
  }
  qb.innerHTML = qs || "<tr><td colspan=4>no queues</td></tr>";
  // Widths set through the DOM: the CSP allows no inline style attributes.
  for (const b of qb.querySelectorAll("[data-pct]")) b.style.width = b.dataset.pct + "%";
  // Threads: load is the share of polls that found work since the last poll.
  const th = val("threads");
  if (th !== null) {
    const threads = {}, tasks = {};
    for (const l of th.split("\n")) {
      const w = l.split(" ");
      if (w[0] === "thread") threads[w[1]] = {polls: +w[2], idle: +w[3]};
      if (w[0] === "task") (tasks[w[3]] = tasks[w[3]] || []).push(w[1] + (w[2] !== "0" ? "#" + w[2] : ""));
    }
    let ts = "";
    for (const [t, x] of Object.entries(threads)) {
      let load = "";
      if (lastThreads && lastThreads[t]) {
        const dp = x.polls - lastThreads[t].polls, di = x.idle - lastThreads[t].idle;
        load = dp > 0 ? (100 * (dp - di) / dp).toFixed(0) + "%" : "0%";
      }
      ts += `<tr id="${idOf("thread", t)}"><td>${t}</td><td>${load}</td><td>${esc((tasks[t] || []).join(", "))}</td></tr>`;
    }
    document.querySelector("#threads tbody").innerHTML = ts;
    lastThreads = threads;
  }
  document.getElementById("status").textContent = "live · " + elements.length + " elements · updated " + new Date().toLocaleTimeString();
}

async function load() {
  const r = await readMany(["flatconfig", "version"]);
  if (!r.flatconfig || !r.flatconfig.ok) throw new Error(r.flatconfig ? r.flatconfig.error : "no flatconfig");
  [elements, edges] = parseFlat(r.flatconfig.value);
  const hr = await readMany(elements.map(e => e.name + ".handlers"));
  handlers = {};
  for (const e of elements) {
    const x = hr[e.name + ".handlers"];
    handlers[e.name] = new Set(x && x.ok ? x.value.split("\n").filter(l => /\tr/.test(l)).map(l => l.split("\t")[0]) : []);
  }
  drawCompounds();
  layout();
}

async function handlerCall(write) {
  const h = document.getElementById("h-name").value.trim();
  const out = document.getElementById("h-result");
  let r;
  try {
    if (write) r = await api("/api/write?h=" + encodeURIComponent(h), {method: "POST",
      headers: {"Content-Type": "application/octet-stream", "X-Paraclick-Token": TOKEN},
      body: document.getElementById("h-value").value});
    else r = (await readMany([h]))[h];
  } catch (err) { r = {ok: false, error: String(err)}; }
  out.className = r.ok ? "" : "err";
  out.textContent = r.ok ? (write ? "write " + h + ": OK" : r.value) : r.error;
  if (write && r.ok && h === "hotconfig") { await load(); }
}
document.getElementById("hform").addEventListener("submit", e => e.preventDefault());
document.getElementById("h-read").onclick = () => handlerCall(false);
document.getElementById("h-write").onclick = () => handlerCall(true);

(async () => {
  try { await load(); } catch (err) { document.getElementById("status").textContent = "error: " + err; }
  poll();
  setInterval(poll, POLL_MS);
})();
