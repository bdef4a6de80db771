// Contextwright console: reads the service's own API with the key the user entered.
"use strict";

const POLL_MS = 1500;
const COLORS = ["#1b5fd1", "#d9822b", "#2e9e5b", "#a34fc4", "#c23b3b", "#5b6b82", "#19a2a8", "#b58b00", "#7a4e2d", "#e05a9a"];
const SVG = "http://www.w3.org/2000/svg";
const state = { key: sessionStorage.getItem("cw-key") || "", session: null, lastSeq: -1, timer: null, classes: [] };

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "class") node.className = value; else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

async function api(path) {
  const response = await fetch(path, { headers: { Authorization: "Bearer " + state.key, Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) {
    const error = new Error(body.detail || response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

const fmt = {
  int: (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US")),
  share: (x) => (x === null || x === undefined ? "—" : (100 * x).toFixed(1) + "%"),
  usd: (s) => (s === null || s === undefined ? "—" : "$" + Number(s).toFixed(4)),
};

// -- signing in ----------------------------------------------------------------------

async function signIn(key) {
  state.key = key;
  try {
    await showSessions();
  } catch (error) {
    state.key = "";
    sessionStorage.removeItem("cw-key");
    $("login-error").textContent = error.status === 401 ? "That key is not valid (unknown or revoked)." : "Cannot reach the service: " + error.message;
    $("login").hidden = false;
    return;
  }
  sessionStorage.setItem("cw-key", key);
  $("login").hidden = true;
  $("login-error").textContent = "";
  $("sign-out").hidden = false;
  $("who").textContent = "Signed in with key " + key.split("_")[1];
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted) openSession(wanted);
}

function signOut() {
  sessionStorage.removeItem("cw-key");
  clearInterval(state.timer);
  Object.assign(state, { key: "", session: null, lastSeq: -1, timer: null, sessionsDrawn: null });
  for (const id of ["sessions", "session"]) $(id).hidden = true;
  $("login").hidden = false;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  history.replaceState(null, "", location.pathname);
  $("api-key").focus();
}

// -- the sessions list ---------------------------------------------------------------

async function showSessions() {
  const data = await api("/v1/sessions");
  // Redraw only on change, so a focused link in the list keeps its focus while the page polls.
  const drawn = JSON.stringify(data.sessions);
  if (drawn === state.sessionsDrawn) return;
  state.sessionsDrawn = drawn;
  const body = $("sessions-table").tBodies[0];
  body.replaceChildren();
  for (const s of data.sessions) {
    const open = el("button", { type: "button", class: "link", "data-session": s.session_id }, s.session_id);
    open.addEventListener("click", () => openSession(s.session_id));
    body.append(el("tr", {}, el("td", {}, open), el("td", {}, s.provider + " · " + s.model), el("td", { class: "num" }, fmt.int(s.last_seq)), el("td", {}, s.created_at)));
  }
  $("sessions-empty").hidden = data.sessions.length > 0;
  $("sessions").hidden = false;
}

// -- one session, live ---------------------------------------------------------------

function openSession(id) {
  clearInterval(state.timer);
  Object.assign(state, { session: id, lastSeq: -1, classes: [] });
  history.replaceState(null, "", "#session=" + encodeURIComponent(id));
  $("session-name").textContent = id;
  $("session").hidden = false;
  for (const id of ["inspect-result", "diff-result", "why-result", "misses-result"]) $(id).replaceChildren();
  state.misses = false;
  refresh().then(() => $("session-heading").scrollIntoView());
  state.timer = setInterval(refresh, POLL_MS);
}

async function refresh() {
  const id = state.session;
  const base = "/v1/sessions/" + encodeURIComponent(id);
  let series;
  try {
    // A one-row read tells whether the log moved; the series is folded from the whole log.
    if (state.lastSeq >= 0) {
      const probe = await api(base + "/events?limit=1&after_seq=" + state.lastSeq);
      if (!probe.events.length) return;
    }
    series = await api(base + "/series");
  } catch (error) {
    $("session-status").textContent = "Could not load the series: " + error.message;
    return;
  }
  if (id !== state.session || series.last_seq === state.lastSeq) return;
  state.lastSeq = series.last_seq;
  const stats = await api(base + "/stats");
  renderTotals(stats.summary, series.points);
  renderTokens(series.points);
  renderLine($("chart-cache"), series.points.map((p) => p.cache_read_share), 1, (v) => fmt.share(v));
  markAlarms($("chart-cache"), (stats.summary || {}).cache_alarms, series.points);
  let total = 0;
  renderLine($("chart-cost"), series.points.map((p) => (p.cost_usd === null ? null : (total += Number(p.cost_usd)))), null, (v) => fmt.usd(v));
  renderTable(series.points);
  $("session-status").textContent = series.points.length + " requests, log at seq " + series.last_seq + ".";
  if (state.misses) showMisses();
  showSessions().catch(() => {});
  const index = $("inspect-index");
  index.max = Math.max(0, series.points.length - 1);
  if (index.value === "" && series.points.length) index.value = series.points.length - 1;
}

function renderTotals(summary, points) {
  const s = summary || {};
  const compactions = Object.values(s.compactions_by_trigger || {}).reduce((a, b) => a + b, 0);
  const yields = Object.values(s.yields_by_kind || {}).reduce((a, b) => a + b, 0);
  const items = [
    ["Requests", fmt.int(points.length)],
    ["Last request tokens", fmt.int(points.length ? points[points.length - 1].total_tokens : null)],
    ["Cache-read share", fmt.share(s.cache_read_share)],
    ["Cost", fmt.usd(s.total_cost_usd)],
    ["Compactions", fmt.int(compactions)],
    ["Yields", fmt.int(yields)],
    ["Overflow recoveries", fmt.int(s.overflow_recoveries || 0)],
    ["Epochs", fmt.int(s.epochs)],
  ];
  $("totals").replaceChildren(...items.map(([name, value]) => el("div", { "data-total": name }, el("dt", {}, name), el("dd", {}, value))));
}

function classesOf(points) {
  for (const p of points) for (const c of Object.keys(p.tokens_by_class)) if (!state.classes.includes(c)) state.classes.push(c);
  return state.classes;
}

function renderTokens(points) {
  const chart = $("chart-tokens");
  const [W, H, pad] = [720, 240, 24];
  chart.replaceChildren();
  const classes = classesOf(points);
  const top = Math.max(1, ...points.map((p) => p.total_tokens));
  const step = (W - pad) / Math.max(1, points.length);
  const bar = Math.max(2, step * 0.7);
  points.forEach((p, i) => {
    let y = H - pad;
    const x = pad + i * step;
    const group = svg("g", { "data-request": p.index });
    group.append(svg("title", {}, "Request " + p.index + ": " + fmt.int(p.total_tokens) + " tokens"));
    classes.forEach((c, k) => {
      const value = p.tokens_by_class[c] || 0;
      const h = ((H - 2 * pad) * value) / top;
      y -= h;
      if (h > 0) group.append(svg("rect", { x, y, width: bar, height: h, fill: COLORS[k % COLORS.length] }));
    });
    chart.append(group);
    const marks = [];
    if (p.changes.some((c) => c.startsWith("compacted"))) marks.push(p.overflow_recovery ? "overflow recovery" : "compaction");
    if (p.yields.length) marks.push("yields: " + p.yields.join(", "));
    if (marks.length) {
      const line = svg("line", { x1: x + bar / 2, x2: x + bar / 2, y1: pad / 2, y2: H - pad, stroke: p.overflow_recovery ? "#a3161b" : "#444", "stroke-dasharray": "4 3" });
      line.append(svg("title", {}, "Request " + p.index + ": " + marks.join("; ")));
      chart.append(line);
    }
  });
  chart.append(svg("text", { x: pad, y: 14, "font-size": 12, fill: "#596273" }, "max " + fmt.int(top) + " tokens"));
  $("tokens-legend").replaceChildren(...classes.map((c, k) => el("li", {}, el("span", { "data-color": COLORS[k % COLORS.length] }), c)));
  for (const swatch of $("tokens-legend").querySelectorAll("span")) swatch.style.background = swatch.dataset.color;
}

function renderLine(chart, values, fixedTop, label) {
  const [W, H, pad] = [360, 160, 18];
  chart.replaceChildren();
  const known = values.filter((v) => v !== null);
  if (!known.length) {
    chart.append(svg("text", { x: pad, y: H / 2, "font-size": 13, fill: "#596273" }, "no usage recorded yet"));
    return;
  }
  const top = fixedTop || Math.max(...known) || 1;
  const step = (W - 2 * pad) / Math.max(1, values.length - 1);
  const points = values.map((v, i) => (v === null ? null : [pad + i * step, H - pad - ((H - 2 * pad) * v) / top]));
  const path = points.filter(Boolean).map((p, i) => (i ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1)).join(" ");
  chart.append(svg("path", { d: path, fill: "none", stroke: "#1b5fd1", "stroke-width": 2 }));
  points.forEach((p, i) => {
    if (!p) return;
    const dot = svg("circle", { cx: p[0], cy: p[1], r: 3, fill: "#1b5fd1" });
    dot.append(svg("title", {}, "Request " + i + ": " + label(values[i])));
    chart.append(dot);
  });
  chart.append(svg("text", { x: pad, y: 13, "font-size": 11, fill: "#596273" }, "top " + label(top)));
}

// A red marker over each request whose cache-read share fell well below the session's running level.
function markAlarms(chart, alarms, points) {
  const [W, H, pad] = [360, 160, 18];
  const step = (W - 2 * pad) / Math.max(1, points.length - 1);
  for (const alarm of alarms || []) {
    const i = points.findIndex((p) => p.index === alarm.request_index);
    if (i < 0) continue;
    const [x, y] = [pad + i * step, H - pad - (H - 2 * pad) * alarm.share];
    const mark = svg("path", { d: `M${(x - 5).toFixed(1)} ${(y - 11).toFixed(1)} h10 l-5 7 z`, fill: "#c62828", "data-alarm": alarm.request_index });
    const cause = (alarm.cause || "not known from the log").replaceAll("_", " ");
    mark.append(svg("title", {}, "Cache alarm, request " + alarm.request_index + ": cache read " + fmt.share(alarm.share) +
      " against a running " + fmt.share(alarm.running_level) + "; cause: " + cause));
    chart.append(mark);
  }
}

function renderTable(points) {
  const body = $("series-table").tBodies[0];
  body.replaceChildren(
    ...points.map((p) => {
      const largest = Object.entries(p.tokens_by_class).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([c, n]) => c + " " + fmt.int(n)).join(", ");
      const inspect = el("button", { type: "button", class: "link", "aria-label": "Inspect request " + p.index }, "Inspect");
      inspect.addEventListener("click", () => { $("inspect-index").value = p.index; inspectRequest(); });
      const diff = el("button", { type: "button", class: "link", "aria-label": "What changed in request " + p.index }, "Diff");
      diff.addEventListener("click", () => { $("inspect-index").value = p.index; showDiff(); });
      return el("tr", { "data-request": p.index },
        el("th", { scope: "row" }, p.index), el("td", { class: "num" }, fmt.int(p.total_tokens)), el("td", {}, largest),
        el("td", { class: "num" }, fmt.share(p.cache_read_share)), el("td", { class: "num" }, fmt.usd(p.cost_usd)),
        el("td", {}, p.pressure), el("td", {}, p.yields.join(", ") || "—"), el("td", {}, p.changes.join(", ") || "—"), el("td", {}, inspect, " · ", diff));
    }),
  );
}

// -- the inspector --------------------------------------------------------------------

async function inspectRequest() {
  const out = $("inspect-result");
  const index = $("inspect-index").value;
  const wire = $("inspect-wire").value;
  const query = wire ? "?wire=" + encodeURIComponent(wire) : "";
  out.replaceChildren(el("p", {}, "Rebuilding request " + index + " from the log…"));
  let data;
  try {
    data = await api("/v1/sessions/" + encodeURIComponent(state.session) + "/requests/" + encodeURIComponent(index) + query);
  } catch (error) {
    out.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  const badge = data.verified
    ? el("span", { class: "badge good", id: "inspect-verdict" }, "Hash verified")
    : el("span", { class: "badge bad", id: "inspect-verdict" }, "Hash mismatch");
  const facts = el("dl", { class: "totals" },
    el("div", {}, el("dt", {}, "Request"), el("dd", {}, data.index)),
    el("div", {}, el("dt", {}, "Epoch"), el("dd", {}, data.epoch)),
    el("div", {}, el("dt", {}, "Tokens"), el("dd", {}, fmt.int(data.total_tokens))),
    el("div", {}, el("dt", {}, "Wire"), el("dd", {}, data.wire)));
  const hashes = el("p", {}, badge, " recorded ", el("code", {}, data.recorded_sha256), ", rebuilt ", el("code", {}, data.rebuilt_sha256));
  const system = el("details", {}, el("summary", {}, "System prompt (" + data.request.system.length + " blocks, prefix " + data.prefix_sha256.slice(0, 19) + "…)"),
    ...data.request.system.map((b) => el("section", { class: "message" }, el("h4", {}, b.budget_class), el("pre", {}, b.text))));
  const messages = data.request.messages.map((m, i) => el("section", { class: "message", "aria-label": "Message " + (i + 1) + ", " + m.role },
    el("h4", {}, (i + 1) + ". " + m.role),
    ...m.parts.map((part) => el("pre", {}, part.kind === "tool_call" ? "→ " + part.name + " " + JSON.stringify(part.arguments) : part.kind === "tool_result" ? "← " + part.name + (part.is_error ? " (error)" : "") + "\n" + part.text : part.text))));
  const body = el("details", {}, el("summary", {}, "Body sent on the " + data.wire + " wire"), el("pre", {}, JSON.stringify(data.body, null, 2)));
  out.replaceChildren(el("h4", { id: "inspect-title", tabindex: "-1" }, "Request " + data.index), hashes, facts, system, el("h4", {}, "Messages (" + messages.length + ")"), ...messages, body);
  $("inspect-title").focus();
}

// -- cache misses per request -----------------------------------------------------------

async function showMisses() {
  const out = $("misses-result");
  state.misses = true;
  if (!out.children.length) out.replaceChildren(el("p", {}, "Rebuilding every request and simulating the cache…"));
  let data;
  try {
    data = await api(sessionPath() + "/misses");
  } catch (error) {
    out.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  const total = data.points.reduce((sum, p) => sum + p.uncached_tokens, 0);
  const rows = data.points.map((p) => el("tr", { "data-request": p.index },
    el("th", { scope: "row" }, p.index), el("td", { class: "num" }, fmt.int(p.uncached_tokens)),
    el("td", { class: "num" }, fmt.int(p.predicted_cache_read_tokens)), el("td", {}, p.main_cause ? p.main_cause.replace(/_/g, " ") : "—"),
    el("td", {}, Object.entries(p.by_cause).sort((a, b) => b[1] - a[1]).map(([c, n]) => c.replace(/_/g, " ") + " " + fmt.int(n)).join(", ") || "—")));
  out.replaceChildren(
    el("p", {}, fmt.int(total) + " uncached input tokens over " + data.points.length + " requests, under " + data.rule_set + "'s caching rules."),
    el("table", { id: "misses-table" },
      el("caption", { class: "visually-hidden" }, "Uncached input tokens per request, by cause"),
      el("thead", {}, el("tr", {}, ...["Request", "Uncached", "Read from cache", "Main cause", "All causes"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ...rows)));
}

// -- what changed, and why ------------------------------------------------------------

function sessionPath() {
  return "/v1/sessions/" + encodeURIComponent(state.session);
}

async function showDiff() {
  const out = $("diff-result");
  const index = $("inspect-index").value;
  out.replaceChildren(el("p", {}, "Comparing request " + index + " with the one before…"));
  let data;
  try {
    data = await api(sessionPath() + "/requests/" + encodeURIComponent(index) + "/diff?text_chars=200");
  } catch (error) {
    out.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  const against = data.previous === null ? "nothing (the first request)" : "request " + data.previous;
  const counts = Object.entries(data.counts).map(([status, n]) => n + " " + status).join(", ");
  const causes = Object.entries(data.causes).map(([kind, n]) => kind.replace("_", " ") + " ×" + n).join(", ") || "none";
  const between = Object.entries(data.events_between).map(([type, n]) => type + " ×" + n).join(", ") || "none";
  const rows = [];
  let kept = [];
  const flush = () => {
    if (!kept.length) return;
    const first = kept[0].after.where, last = kept[kept.length - 1].after.where;
    rows.push(el("tr", { class: "kept" }, el("td", {}, "kept"), el("td", {}, kept.length + " block(s): " + first + (kept.length > 1 ? " … " + last : "")),
      el("td", {}, ""), el("td", {}, ""), el("td", {}, ""), el("td", {}, kept[0].cache), el("td", {}, "")));
    kept = [];
  };
  for (const change of data.changes) {
    if (change.status === "kept" && (!kept.length || kept[0].cache === change.cache)) { kept.push(change); continue; }
    flush();
    if (change.status === "kept") { kept.push(change); continue; }
    const block = change.after || change.before;
    rows.push(el("tr", { "data-status": change.status },
      el("td", {}, change.status), el("td", {}, block.where + ": " + block.kind + (block.call_id ? " " + block.call_id : "")),
      el("td", {}, block.ref + (block.event_type ? " (" + block.event_type + ")" : "")), el("td", {}, block.shaped_by),
      el("td", {}, block.budget_class + " · " + block.envelope), el("td", {}, change.cache), el("td", {}, change.cause)));
  }
  flush();
  const table = el("table", { id: "diff-table" },
    el("caption", {}, "Blocks of request " + data.index + " against " + against),
    el("thead", {}, el("tr", {}, ...["Status", "Block", "From", "Shaped by", "Class · envelope", "Cache", "Cause"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...rows));
  out.replaceChildren(
    el("h4", { id: "diff-title", tabindex: "-1" }, "Request " + data.index + " against " + against),
    el("p", { id: "diff-counts" }, counts + (data.prefix_changed ? "; the prefix changed" : "") + "."),
    el("p", { id: "diff-causes" }, "Causes of the differences: " + causes + "."),
    el("p", {}, "Events between the two requests: " + between + "."),
    table);
  $("diff-title").focus();
}

const STEPS_SHOWN = 12;

function stepRows(data) {
  // A common text has a long history: its first step and its latest ones say what happened.
  let steps = data.steps;
  const skipped = steps.length - STEPS_SHOWN;
  if (skipped > 0) steps = [steps[0], null, ...steps.slice(-(STEPS_SHOWN - 1))];
  return [...steps, ...data.later].map((step) => step === null
    ? el("tr", { class: "kept" }, el("td", {}, "…"), el("td", {}, ""), el("td", {}, skipped + " more step(s)"), el("td", {}, ""))
    : el("tr", data.hidden_by && step.seq === data.hidden_by.seq && step.what === data.hidden_by.what ? { class: "hid" } : {},
      el("td", { class: "num" }, step.seq), el("td", {}, step.what), el("td", {}, step.detail), el("td", {}, el("code", {}, step.pointer || ""))));
}

async function explainText() {
  const out = $("why-result");
  const text = $("why-text").value;
  const index = $("inspect-index").value;
  const query = "?text=" + encodeURIComponent(text) + (index === "" ? "" : "&request=" + encodeURIComponent(index));
  out.replaceChildren(el("p", {}, "Reading the log…"));
  let data;
  try {
    data = await api(sessionPath() + "/why" + query);
  } catch (error) {
    out.replaceChildren(el("p", { class: "error", role: "alert" }, error.message));
    return;
  }
  const good = data.fate === "shown" || data.fate === "read_back";
  const fate = el("span", { class: "badge " + (good ? "good" : data.hidden ? "bad" : "plain"), id: "why-fate" }, data.fate.replace("_", " "));
  const steps = el("table", { id: "why-steps" },
    el("caption", {}, "From the log"),
    el("thead", {}, el("tr", {}, ...["Seq", "Step", "What happened", "Pointer"].map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...stepRows(data)));
  const extra = [
    ...data.shown_in.map((where) => el("li", {}, "Shown in " + where)),
    ...data.left.map((line) => el("li", {}, "Left of it: " + line)),
  ];
  if (data.pointer) extra.push(el("li", {}, "The original: ", el("code", {}, data.pointer)));
  out.replaceChildren(el("p", { id: "why-summary", tabindex: "-1" }, fate, " ", data.summary), steps, el("ul", {}, ...extra));
  $("why-summary").focus();
}

// -- wiring ---------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", (event) => { event.preventDefault(); signIn($("api-key").value.trim()); });
  $("inspect-form").addEventListener("submit", (event) => { event.preventDefault(); inspectRequest(); });
  $("diff-button").addEventListener("click", showDiff);
  $("misses-button").addEventListener("click", showMisses);
  $("why-form").addEventListener("submit", (event) => { event.preventDefault(); explainText(); });
  $("sign-out").addEventListener("click", signOut);
  if (state.key) signIn(state.key); else $("api-key").focus();
});
