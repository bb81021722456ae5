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
let loaded = false;         // the graph was drawn once
let traces = {};            // trace id -> {steps: [element], end: text}
let traceShown = "";        // the trace drawn on the graph

async function api(path, opts) {
  const r = await fetch(path, opts);
  if (!r.ok) throw new Error(r.status + " " + r.statusText);
  return r.json();
}
async function readMany(hs) {
  if (!hs.length) return {};
  return api("/api/read?" + hs.map(h => "h=" + encodeURIComponent(h)).join("&"));
}

// The statements of a Click text: split at top-level ';', comments left
// out, quoted strings, \<hex> data and parentheses kept whole (a
// declaration's configuration may span lines and hold ';').
function statements(text) {
  const out = [];
  let cur = "", depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i], n = text[i + 1];
    let j = -1;
    if (c === "/" && n === "/") { j = text.indexOf("\n", i); if (j < 0) j = text.length; cur += " "; i = j; continue; }
    if (c === "/" && n === "*") { j = text.indexOf("*/", i + 2); i = j < 0 ? text.length : j + 1; cur += " "; continue; }
    if (c === '"') { j = i + 1; while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1; }
    else if (c === "'") { j = text.indexOf("'", i + 1); if (j < 0) j = text.length; }
    else if (c === "\\" && n === "<") { j = text.indexOf(">", i); if (j < 0) j = text.length; }
    if (j >= 0) { cur += text.slice(i, j + 1); i = j; continue; }
    if (c === "(") depth++;
    else if (c === ")") depth = Math.max(0, depth - 1);
    if (c === ";" && depth === 0) { if (cur.trim()) out.push(cur.trim()); cur = ""; continue; }
    cur += c;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

// The flattened configuration (the flatconfig handler): one declaration
// per element; connections one to a statement or in chains; other
// statements (a `require`) are set aside.
function parseFlat(text) {
  const els = [], es = [], bad = [];
  for (const st of statements(text)) {
    let m = st.match(/^(\S+)\s*::\s*([A-Za-z0-9_@\/]+)\s*(?:\(([\s\S]*)\))?$/);
    if (m) { els.push({name: m[1], cls: m[2], config: m[3] || ""}); continue; }
    // A connection, or a chain of them as flatconfig prints them:
    // `a [1] -> [0] b` and `a\n    -> b\n    -> [1] c`.
    const hops = st.split("->").map(h => h.trim().match(/^(?:\[\s*(\d+)\s*\]\s*)?([^\s\[\]]+)\s*(?:\[\s*(\d+)\s*\])?$/));
    if (hops.length > 1 && hops.every(h => h)) {
      for (let i = 0; i + 1 < hops.length; i++)
        es.push({from: hops[i][2], fp: +(hops[i][3] || 0), to: hops[i + 1][2], tp: +(hops[i + 1][1] || 0)});
      continue;
    }
    if (!/^require\s*\(/.test(st)) bad.push(st);
  }
  return [els, es, bad];
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

// Node size and gaps of the drawing, in SVG units.
const W = 150, H = 62, GX = 40, GY = 18;
// Above this many elements, compounds start collapsed.
const COLLAPSE_ABOVE = 80;
let zoom = 1, graphSize = [400, 200], zoomSet = false;

// Places the nodes in layers: each node one right of its predecessors,
// cycles (a route back to a lookup, say) drawn as back edges instead of
// pushing everything after them further right; within a layer, nodes
// ordered by their neighbours' rows, so that edges cross less.
function place(nodes, links) {
  const out = {}, indeg = {};
  for (const n of nodes) { out[n.id] = []; indeg[n.id] = 0; }
  for (const l of links) { out[l.a].push(l); indeg[l.b]++; }
  // Back edges: those closing a cycle in a depth-first walk from the
  // sources (nodes without predecessors) first.
  const state = {}, back = new Set();
  for (const root of nodes.filter(n => !indeg[n.id]).concat(nodes)) {
    if (state[root.id]) continue;
    state[root.id] = 1;
    const stack = [[root.id, 0]];
    while (stack.length) {
      const top = stack[stack.length - 1], ls = out[top[0]];
      if (top[1] < ls.length) {
        const l = ls[top[1]++];
        if (state[l.b] === 1) back.add(l);
        else if (!state[l.b]) { state[l.b] = 1; stack.push([l.b, 0]); }
      } else { state[top[0]] = 2; stack.pop(); }
    }
  }
  // Layers: longest path from the sources over the other edges.
  const layer = {}, left = {}, next = {}, prev = {};
  for (const n of nodes) { layer[n.id] = 0; left[n.id] = 0; next[n.id] = []; prev[n.id] = []; }
  for (const l of links) if (!back.has(l)) { next[l.a].push(l.b); prev[l.b].push(l.a); left[l.b]++; }
  const ready = nodes.filter(n => !left[n.id]).map(n => n.id);
  for (let i = 0; i < ready.length; i++) {
    const a = ready[i];
    for (const b of next[a]) {
      layer[b] = Math.max(layer[b], layer[a] + 1);
      if (--left[b] === 0) ready.push(b);
    }
  }
  const cols = [];
  for (const n of nodes) (cols[layer[n.id]] = cols[layer[n.id]] || []).push(n.id);
  for (let c = 0; c < cols.length; c++) cols[c] = cols[c] || [];
  // Order within layers: a few sweeps of the barycentre heuristic.
  const row = {};
  const number = () => { for (const col of cols) col.forEach((id, r) => { row[id] = r; }); };
  number();
  const sortBy = (col, nb) => {
    const key = {};
    for (const id of col) {
      const ns = nb[id];
      key[id] = ns.length ? ns.reduce((s, x) => s + row[x], 0) / ns.length : row[id];
    }
    col.sort((x, y) => key[x] - key[y] || row[x] - row[y]);
    col.forEach((id, r) => { row[id] = r; });
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let c = 1; c < cols.length; c++) sortBy(cols[c], prev);
    for (let c = cols.length - 2; c >= 0; c--) sortBy(cols[c], next);
  }
  const pos = {};
  let maxRow = 0;
  cols.forEach((col, c) => col.forEach((id, r) => {
    pos[id] = {x: 10 + c * (W + GX), y: 10 + r * (H + GY)};
    maxRow = Math.max(maxRow, r);
  }));
  return {pos, back, width: 20 + cols.length * (W + GX), height: 20 + (maxRow + 1) * (H + GY)};
}

function layout() {
  const nodes = [], seen = new Set();
  for (const e of elements) {
    const n = shown(e.name);
    if (seen.has(n)) continue;
    seen.add(n);
    nodes.push(n === e.name ? {id: n, el: e} : {id: n, group: true,
      size: elements.filter(x => shown(x.name) === n).length});
  }
  const links = [], keys = new Set(), unknown = new Set();
  for (const e of edges) {
    const a = shown(e.from), b = shown(e.to);
    // A connection naming no declared element: said on the page, not
    // drawn (nothing else is lost).
    if (!seen.has(a)) { unknown.add(e.from); continue; }
    if (!seen.has(b)) { unknown.add(e.to); continue; }
    if (a !== b && !keys.has(a + "\n" + b)) { keys.add(a + "\n" + b); links.push({a, b}); }
  }
  const {pos, back, width, height} = place(nodes, links);
  graphSize = [width, height];
  let s = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z" fill="#90a4ae"/></marker></defs>';
  for (const l of links) {
    const a = pos[l.a], b = pos[l.b];
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    if (back.has(l)) {
      // Back to an earlier layer: around below the two nodes.
      const low = Math.max(a.y, b.y) + H + GY / 2;
      s += `<path class="edge back" data-a="${esc(l.a)}" data-b="${esc(l.b)}" d="M${a.x + W / 2},${a.y + H} C${a.x + W / 2},${low} ${b.x + W / 2},${low} ${b.x + W / 2},${b.y + H}"/>`;
    } else {
      s += `<path class="edge" data-a="${esc(l.a)}" data-b="${esc(l.b)}" d="M${x1},${y1} C${x1 + 25},${y1} ${x2 - 25},${y2} ${x2},${y2}"/>`;
    }
  }
  for (const n of nodes) {
    const p = pos[n.id];
    if (n.group) {
      s += `<g class="node group" data-group="${esc(n.id)}" transform="translate(${p.x},${p.y})"><rect width="${W}" height="${H}" rx="4"/>` +
        `<text class="name" x="6" y="16">${esc(n.id)}/ ▸</text><text class="cls" x="6" y="32">${n.size} elements (click)</text></g>`;
    } else {
      const q = /Queue$/.test(n.el.cls) ? " queue" : "";
      s += `<g class="node${q}" data-el="${esc(n.id)}" transform="translate(${p.x},${p.y})"><rect width="${W}" height="${H}" rx="4"/>` +
        `<title>${esc(n.id)} :: ${esc(n.el.cls)}</title>` +
        `<text class="name" x="6" y="15">${esc(n.id.length > 22 ? "…" + n.id.slice(-21) : n.id)}</text>` +
        `<text class="cls" x="6" y="29">${esc(n.el.cls)}</text>` +
        `<text class="stat" x="6" y="44" id="${idOf("count", n.id)}"></text>` +
        `<text class="stat" x="6" y="57" id="${idOf("rate", n.id)}"></text></g>`;
    }
  }
  const svg = document.getElementById("graph");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.innerHTML = s;
  if (!zoomSet) {
    // First drawing: the whole width if that keeps the text readable.
    const wrap = document.getElementById("graph-wrap");
    zoomSet = true;
    zoom = Math.min(1, Math.max(0.75, (wrap.clientWidth - 4) / width));
  }
  setZoom(zoom);
  for (const g of svg.querySelectorAll("[data-group]")) g.onclick = () => { collapsed.delete(g.dataset.group); drawCompounds(); layout(); };
  graphNote(unknown.size ? "connections to undeclared elements not drawn: " + [...unknown].join(", ") : "");
  showTrace();
}

// The tracer's records (the `trace` read handler, as `paraclick ctl trace
// show` prints them): per traced packet, the elements it visited in
// order (where it entered, then each hop's destination) and how it ended.
function parseTraces(text) {
  const out = {};
  let cur = null;
  for (const l of text.split("\n")) {
    let m = l.match(/^trace (\d+):$/);
    if (m) { cur = out[m[1]] = {steps: [], hops: [], end: ""}; continue; }
    if (!cur) continue;
    if ((m = l.match(/thread \d+\s+entered at (\S+) :: /))) { cur.steps.push(m[1]); continue; }
    if ((m = l.match(/thread \d+\s+(\S+)\[\d+\] -> \[\d+\](\S+) :: /))) {
      cur.hops.push([m[1], m[2]]);
      cur.steps.push(m[2]);
      continue;
    }
    if ((m = l.match(/thread \d+\s+(dropped by .*)$/)) || (m = l.match(/^  ((?:left through|still queued in|kept or consumed by) .*)$/))) cur.end = m[1];
  }
  return out;
}

async function loadTraces() {
  const r = await readMany(["trace"]);
  const pick = document.getElementById("trace-pick");
  if (!r.trace || !r.trace.ok) { traceNote("trace: " + (r.trace ? r.trace.error : "no reply")); return; }
  traces = parseTraces(r.trace.value);
  const ids = Object.keys(traces).sort((a, b) => a - b);
  pick.innerHTML = '<option value="">no trace shown</option>' + ids.map(id =>
    `<option value="${esc(id)}">trace ${esc(id)}: ${traces[id].steps.length} elements</option>`).join("");
  if (ids.length) { pick.value = ids.includes(traceShown) ? traceShown : ids[0]; }
  else traceNote(r.trace.value.trim().split("\n").pop());
  traceShown = pick.value;
  showTrace();
}

function traceNote(text) { document.getElementById("trace-msg").textContent = text; }

// Marks the chosen trace's nodes (numbered in the order the packet visited
// them) and the edges it took.
function showTrace() {
  const svg = document.getElementById("graph");
  for (const x of svg.querySelectorAll(".traced")) x.classList.remove("traced");
  for (const x of svg.querySelectorAll(".step")) x.remove();
  const t = traces[traceShown];
  if (!t) { if (traceShown) traceNote(""); return; }
  const steps = {}, nodes = {};
  for (const g of svg.querySelectorAll(".node")) nodes[g.dataset.el || g.dataset.group] = g;
  t.steps.forEach((name, i) => {
    const id = shown(name);
    if (!nodes[id]) return;
    (steps[id] = steps[id] || []).push(i + 1);
  });
  for (const [id, ns] of Object.entries(steps)) {
    const g = nodes[id];
    g.classList.add("traced");
    g.dataset.steps = ns.join(",");
    const txt = document.createElementNS("http://www.w3.org/2000/svg", "text");
    txt.setAttribute("class", "step");
    txt.setAttribute("x", W - 6);
    txt.setAttribute("y", 15);
    txt.setAttribute("text-anchor", "end");
    txt.textContent = "#" + ns.join(",#");
    g.appendChild(txt);
  }
  const taken = new Set(t.hops.map(([a, b]) => shown(a) + "\n" + shown(b)));
  for (const e of svg.querySelectorAll(".edge")) if (taken.has(e.dataset.a + "\n" + e.dataset.b)) e.classList.add("traced");
  traceNote("trace " + traceShown + ": " + t.steps.map(shown).join(" → ") + (t.end ? " · " + t.end : ""));
}

function graphNote(text) {
  const m = document.getElementById("graph-msg");
  m.textContent = text;
  m.className = text ? "err" : "";
}

// Zoom: the SVG's size in the page; the drawing (its viewBox) is unchanged.
function setZoom(z, cx, cy) {
  const wrap = document.getElementById("graph-wrap"), svg = document.getElementById("graph");
  const old = zoom;
  zoom = Math.min(3, Math.max(0.1, z));
  // Keep the point under (cx, cy) (relative to the wrap) in place.
  cx = cx === undefined ? wrap.clientWidth / 2 : cx;
  cy = cy === undefined ? wrap.clientHeight / 2 : cy;
  const gx = (wrap.scrollLeft + cx) / old, gy = (wrap.scrollTop + cy) / old;
  svg.setAttribute("width", Math.round(graphSize[0] * zoom));
  svg.setAttribute("height", Math.round(graphSize[1] * zoom));
  wrap.scrollLeft = gx * zoom - cx;
  wrap.scrollTop = gy * zoom - cy;
  document.getElementById("zoom-level").textContent = Math.round(zoom * 100) + "%";
}

function graphControls() {
  const wrap = document.getElementById("graph-wrap");
  document.getElementById("zoom-in").onclick = () => setZoom(zoom * 1.25);
  document.getElementById("zoom-out").onclick = () => setZoom(zoom / 1.25);
  document.getElementById("zoom-fit").onclick = () => setZoom(Math.min(
    (wrap.clientWidth - 4) / graphSize[0], (wrap.clientHeight - 4) / graphSize[1], 1));
  document.getElementById("zoom-reset").onclick = () => setZoom(1);
  // Ctrl + wheel zooms around the pointer; the wheel alone scrolls.
  wrap.addEventListener("wheel", ev => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    const r = wrap.getBoundingClientRect();
    setZoom(zoom * (ev.deltaY < 0 ? 1.15 : 1 / 1.15), ev.clientX - r.left, ev.clientY - r.top);
  }, {passive: false});
  // Dragging the background pans.
  let drag = null;
  wrap.addEventListener("mousedown", ev => {
    if (ev.button !== 0 || ev.target.closest(".node")) return;
    drag = [ev.clientX, ev.clientY, wrap.scrollLeft, wrap.scrollTop];
    ev.preventDefault();
  });
  window.addEventListener("mousemove", ev => {
    if (!drag) return;
    wrap.scrollLeft = drag[2] - (ev.clientX - drag[0]);
    wrap.scrollTop = drag[3] - (ev.clientY - drag[1]);
  });
  window.addEventListener("mouseup", () => { drag = null; });
  // Find an element: its node (or its collapsed compound's) is marked and
  // brought into view.
  document.getElementById("find").addEventListener("change", ev => {
    const q = ev.target.value.trim();
    for (const g of document.querySelectorAll(".node.found")) g.classList.remove("found");
    if (!q) return;
    const e = elements.find(x => x.name === q) || elements.find(x => x.name.includes(q));
    if (!e) { graphNote("no element matches '" + q + "'"); return; }
    graphNote("");
    const id = shown(e.name);
    const g = [...document.querySelectorAll("#graph .node")].find(x => (x.dataset.el || x.dataset.group) === id);
    if (!g) return;
    g.classList.add("found");
    const r = g.getBoundingClientRect(), w = wrap.getBoundingClientRect();
    wrap.scrollLeft += r.left - w.left - wrap.clientWidth / 2 + r.width / 2;
    wrap.scrollTop += r.top - w.top - wrap.clientHeight / 2 + r.height / 2;
  });
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
  const want = ["threads", "hotswaps", "slices"];
  for (const e of elements) for (const h of STATS) if (handlers[e.name] && handlers[e.name].has(h)) want.push(e.name + "." + h);
  let r;
  try { r = await readMany(want); } catch (err) { document.getElementById("status").textContent = "disconnected: " + err; return; }
  const now = performance.now() / 1000;
  const val = h => r[h] && r[h].ok ? r[h].value.trim() : null;
  const sw = val("hotswaps");
  if (sw !== null) {
    const n = sw.split("\n")[0];
    if (swaps !== null && n !== swaps) { swaps = n; last = {}; await reload(); return; }
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
  // Slices: a substrate's per-slice figures (other routers have no
  // `slices`: the panel stays hidden).
  const sl = val("slices");
  const sp = document.getElementById("slices");
  if (sp) {
    sp.hidden = sl === null;
    if (sl !== null) document.getElementById("slices-text").textContent = sl;
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
  let bad;
  [elements, edges, bad] = parseFlat(r.flatconfig.value);
  if (!loaded && elements.length > COLLAPSE_ABOVE) {
    // A large router: its compounds start collapsed (the boxes above the
    // graph open them).
    for (const e of elements) if (e.name.includes("/")) collapsed.add(e.name.split("/")[0]);
  }
  const hr = await readMany(elements.map(e => e.name + ".handlers"));
  handlers = {};
  for (const e of elements) {
    const x = hr[e.name + ".handlers"];
    handlers[e.name] = new Set(x && x.ok ? x.value.split("\n").filter(l => /\tr/.test(l)).map(l => l.split("\t")[0]) : []);
  }
  loaded = true;
  drawCompounds();
  layout();
  graphNote(bad.length ? "statements not understood: " + bad.join(" | ") : "");
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
  if (write && r.ok && h === "hotconfig") { await reload(); }
}
document.getElementById("hform").addEventListener("submit", e => e.preventDefault());
document.getElementById("h-read").onclick = () => handlerCall(false);
document.getElementById("h-write").onclick = () => handlerCall(true);

// An error drawing the graph stays on the page (the status line is
// overwritten by every poll).
async function reload() {
  try { await load(); } catch (err) { graphNote("error drawing the graph: " + err); }
}

document.getElementById("trace-load").onclick = () => loadTraces().catch(err => traceNote("trace: " + err));
document.getElementById("trace-pick").onchange = ev => { traceShown = ev.target.value; showTrace(); };

// The first drawing is tried again until it works: a read refused or
// timed out while the router was busy starting must not leave the page
// without its graph for good.
async function firstLoad() {
  for (let wait = 250; ; wait = Math.min(2 * wait, 4000)) {
    try { await load(); return; } catch (err) { graphNote("error drawing the graph, trying again: " + err); }
    await new Promise(done => setTimeout(done, wait));
  }
}

graphControls();
(async () => {
  await firstLoad();
  poll();
  setInterval(poll, POLL_MS);
})();
