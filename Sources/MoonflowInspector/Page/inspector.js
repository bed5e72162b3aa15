"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const events = [];          // the frames held, by seq - base
const stateAt = [];         // the state as of each held frame (shared structure)
let base = 0;               // the seq of events[0]: the server keeps a window, and so does the page
let baseState;              // the state just before events[0]
let session = null, selected = -1, live = true, socket = null, askedSince = false;
const differs = new Set();
const rerunNow = new Map();  // differing state frames after "re-run actions": { now, diff }
let shown = null;            // the seqs the filter lets through, or null for every event
const off = new Set();      // action frames toggled off
// The timeline's rows are grouped by cause: what an action caused is drawn under it, in the
// order it arrived, even when it arrived after later actions (a timer, a late answer).
const order = [];           // the held frames' seqs in the order their rows are drawn
const groupEnd = new Map(); // an action frame's seq -> the seq of the last row of its group
const late = new Map();     // a caused frame that arrived after a later action -> that action's seq
const parentOf = new Map(); // a composite's reaction (an action frame with a cause) -> its cause's seq
let lastAction = -1;        // the seq of the latest action frame held
const rowsEl = document.getElementById("rows"), timelineEl = document.getElementById("timeline");
const ROW = 22;

function pointerTokens(path) {
  return path === "" ? [] : path.slice(1).split("/").map(t => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}
function luaPath(path) {
  let out = "";
  for (const t of pointerTokens(path)) {
    if (/^[0-9]+$/.test(t)) out += "[" + (Number(t) + 1) + "]";
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(t)) out += (out ? "." : "") + t;
    else out += "[" + JSON.stringify(t) + "]";
  }
  return out || "state";
}
function getAt(value, tokens) {
  for (const t of tokens) {
    if (value === null || typeof value !== "object") return undefined;
    value = Array.isArray(value) ? value[Number(t)] : value[t];
  }
  return value;
}
// Applies one RFC 6902 operation without touching `value`: only the containers on the path are copied.
function applyOp(value, tokens, op) {
  if (tokens.length === 0) return op.op === "remove" ? null : op.value;
  const [head, ...rest] = tokens;
  const copy = Array.isArray(value) ? value.slice() : Object.assign({}, value);
  if (rest.length === 0) {
    if (Array.isArray(copy)) {
      const i = head === "-" ? copy.length : Number(head);
      if (op.op === "add") copy.splice(i, 0, op.value);
      else if (op.op === "remove") copy.splice(i, 1);
      else copy[i] = op.value;
    } else if (op.op === "remove") delete copy[head];
    else copy[head] = op.value;
    return copy;
  }
  const key = Array.isArray(copy) ? Number(head) : head;
  copy[key] = applyOp(copy[key], rest, op);
  return copy;
}
function applyPatch(value, ops) {
  for (const op of ops) value = applyOp(value, pointerTokens(op.path), op);
  return value;
}
function show(v) { return v === undefined ? "nil" : JSON.stringify(v); }

// The diff of a step, in the spec runner's `- expected` / `+ actual` style: before, then after.
function diffLines(frame) {
  if (frame.event !== "state") return [];
  if (frame.state !== undefined) return ["+ state = " + show(frame.state)];
  const before = frame.seq - 1 - base >= 0 ? stateAt[frame.seq - 1 - base] : baseState;
  const lines = [];
  for (const op of frame.patch || []) {
    const where = luaPath(op.path), old = getAt(before, pointerTokens(op.path));
    if (op.op !== "add" || old !== undefined) lines.push("- " + where + " = " + show(old));
    if (op.op !== "remove") lines.push("+ " + where + " = " + show(op.value));
  }
  return lines.length ? lines : ["(state unchanged)"];
}

// The state frame that shows what a frame did: a state's own; a mutation's, the state it was
// reduced into (the next state frame of the same step); none for other events.
function stateFrameOf(f) {
  if (f.event === "state") return f;
  if (f.event !== "mutation") return null;
  for (let i = f.seq + 1 - base; i < events.length; i++) {
    const g = events[i];
    if (g.event === "state" && g.step === f.step) return g;
    if (g.event === "mutation" || (g.event === "state" && g.step > f.step)) return null;
  }
  return null;
}
function actionName(seq) {
  const a = events[seq - base];
  return "#" + seq + (a && a.action ? " " + a.action.type : "");
}
function lateText(seq) { return late.has(seq) ? "late: after " + actionName(late.get(seq)) : ""; }

// Puts a new frame's row in `order`: an action starts a group; what it caused joins the end
// of its group (marked late when a later action came first); anything else goes last.
// A composite's reaction (an action with a cause) does both: it joins its cause's group and
// starts one of its own inside it.
function place(f) {
  const cause = f.cause ? f.cause.seq : undefined;
  const joins = cause !== undefined && groupEnd.has(cause);
  if (f.event === "action") {
    groupEnd.set(f.seq, f.seq);
    if (!joins) { lastAction = f.seq; order.push(f.seq); return; }
    parentOf.set(f.seq, cause);
  }
  if (!joins) { order.push(f.seq); return; }
  if (lastAction > cause) late.set(f.seq, lastAction);
  const end = groupEnd.get(cause);
  // The group and every group around it that ended where it did end here now.
  for (let g = cause; g !== undefined && groupEnd.get(g) === end; g = parentOf.get(g)) groupEnd.set(g, f.seq);
  if (f.event === "action") groupEnd.set(f.seq, f.seq);
  if (order[order.length - 1] === end) { order.push(f.seq); return; }
  order.splice(order.lastIndexOf(end) + 1, 0, f.seq);
}

function summary(f) {
  switch (f.event) {
    case "action": return "→ " + f.action.type + " " + fieldsText(f.action)
      + (f.to ? " to " + f.to + (f.react ? " (react to effect " + f.react.effect.type + " from " + f.react.from + ")" : "") : "");
    case "mutation": return "• " + f.mutation.type + " " + fieldsText(f.mutation) + (f.from ? " from " + f.from : "");
    case "state": return f.state !== undefined ? "state (whole)" : "state: " + (f.patch || []).map(op => luaPath(op.path)).join(", ");
    case "effect": return "⇒ effect " + f.effect.type + " " + fieldsText(f.effect);
    case "internal": return "⇢ internal effect " + f.effect.type + " " + fieldsText(f.effect) + (f.from ? " from " + f.from : "");
    case "call": return "↗ call " + f.service + " #" + f.call;
    case "invariant": return "✗ invariant " + f.invariant + " broken at step " + f.step + (f.action ? " after " + f.action.type : "") + (f.reason ? ": " + f.reason : "");
    case "cancelled": return "✕ cancelled " + f.id + (f.from ? " in " + f.from : "") + (f.by ? " (by " + f.by.type + ")" : "");
    case "error": return "✗ " + (f.where ? f.where + ": " : "") + f.message;
    case "log": return "log " + (f.where ? f.where + ": " : "") + f.message;
    case "reload": return "↻ reloaded " + (f.files || []).join(", ") + " (" + f.ms + " ms)"
      + ["added", "stale", "kept", "cancelled"].filter(k => f[k]).map(k => "; " + k + " " + f[k].join(", ")).join("");
    default: return f.event;
  }
}
function fieldsText(v) {
  const rest = Object.assign({}, v); delete rest.type;
  const s = JSON.stringify(rest); return s === "{}" ? "" : s;
}

function addFrame(f) {
  const held = base + events.length;
  if (f.seq < held) return;  // already held (a resync after a reconnect)
  if (f.seq > held) {         // a gap: ask once for what is missing
    if (!askedSince) { askedSince = true; hello(held - 1); }
    return;
  }
  askedSince = false;
  // The page keeps as many frames as the server does (session.keep), dropping the oldest tenth.
  const keep = (session && session.keep) || 10000;
  if (events.length >= keep) {
    const n = Math.max(1, Math.floor(keep / 10));
    baseState = stateAt[n - 1]; events.splice(0, n); stateAt.splice(0, n); base += n;
    const kept = order.filter(seq => seq >= base); order.length = 0; order.push(...kept);
    for (const m of [groupEnd, late, parentOf]) for (const seq of [...m.keys()]) if (seq < base) m.delete(seq);
  }
  events.push(f);
  place(f);
  const before = events.length > 1 ? stateAt[events.length - 2] : baseState;
  if (f.event === "state") stateAt.push(f.state !== undefined ? f.state : applyPatch(before, f.patch || []));
  else stateAt.push(before);
  if (f.event === "reload") document.getElementById("rerun").classList.add("hint");
  if (f.event === "error" || f.event === "invariant") {
    const div = document.createElement("div");
    div.textContent = "#" + f.seq + " " + (f.event === "invariant" ? summary(f) : (f.where ? f.where + ": " : "") + f.message);
    div.onclick = () => select(f.seq);
    document.getElementById("errors").appendChild(div);
  }
}

// The timeline's filter: an event kind and text the row must contain (case aside).
function matches(f) {
  const kind = document.getElementById("kind").value, text = document.getElementById("search").value.toLowerCase();
  if (kind && f.event !== kind) return false;
  return !text || (summary(f) + " " + lateText(f.seq) + " " + JSON.stringify(f)).toLowerCase().includes(text);
}
function refilter() {
  const kind = document.getElementById("kind").value, text = document.getElementById("search").value;
  shown = kind || text ? order.filter(seq => matches(events[seq - base])) : null;  // seqs, in row order
}
function render() {
  if (shown !== null) refilter();
  const rows = shown === null ? order : shown, count = rows.length;
  document.getElementById("count").textContent = (shown === null ? "" : count + " of ") + events.length + " events";
  rowsEl.style.height = (count * ROW) + "px";
  const first = Math.max(0, Math.floor(timelineEl.scrollTop / ROW) - 5);
  const last = Math.min(count, first + Math.ceil(timelineEl.clientHeight / ROW) + 10);
  const drawn = document.createDocumentFragment();
  for (let r = first; r < last; r++) {
    const i = rows[r];
    const f = events[i - base];
    if (!f) continue;
    const row = document.createElement("div");
    row.className = "row k-" + f.event + (f.cause ? " caused" : "") + (late.has(i) ? " late" : "") + (i === selected ? " sel" : "")
      + (differs.has(i) ? " differs" : "") + (off.has(i) ? " off" : "");
    row.dataset.seq = String(i);
    row.style.top = (r * ROW) + "px";
    row.append(span("seq", String(i)), span("t", f.t + " ms"), summary(f));
    if (late.has(i)) row.append(span("late", lateText(i)));
    drawn.appendChild(row);
  }
  rowsEl.replaceChildren(drawn);
}
function span(cls, text) { const s = document.createElement("span"); s.className = cls; s.textContent = text; return s; }
document.getElementById("kind").onchange = () => { refilter(); timelineEl.scrollTop = 0; render(); };
document.getElementById("search").oninput = () => { refilter(); timelineEl.scrollTop = 0; render(); };

function tree(value, label) {
  if (value === null || typeof value !== "object") {
    const div = document.createElement("div"); div.className = "leaf";
    div.append(span("key", label), " = " + show(value));
    return div;
  }
  const d = document.createElement("details");
  const keys = Object.keys(value);
  const s = document.createElement("summary");
  s.append(span("key", label), " " + (Array.isArray(value) ? "[" + keys.length + "]" : "{" + keys.length + "}"));
  d.appendChild(s);
  // Children are drawn when opened, and at most 200 at a time: a 1,000-row state stays quick.
  d.ontoggle = () => {
    if (!d.open || d.dataset.drawn) return;
    d.dataset.drawn = "1";
    const draw = from => {
      for (const k of keys.slice(from, from + 200)) d.appendChild(tree(value[k], Array.isArray(value) ? "[" + (Number(k) + 1) + "]" : k));
      if (from + 200 < keys.length) {
        const more = document.createElement("button"); more.textContent = "show " + Math.min(200, keys.length - from - 200) + " more";
        more.onclick = () => { more.remove(); draw(from + 200); };
        d.appendChild(more);
      }
    };
    draw(0);
  };
  return d;
}

function select(seq) {
  if (!events[seq - base]) return;  // no longer held
  selected = seq;
  const f = events[seq - base];
  // The diff first, then the raw frame, folded (the page keeps it open once opened).
  document.getElementById("title").textContent = "#" + seq + " " + f.event + " at " + f.t + " ms";
  const cause = document.getElementById("cause"); cause.replaceChildren();
  if (f.cause) {
    cause.append("caused by " + (events[f.cause.seq - base] ? actionName(f.cause.seq) : "#" + f.cause.seq + " " + f.cause.action.type));
    if (late.has(seq)) cause.append(", ", span("late", "arrived late, after " + actionName(late.get(seq))));
  }
  document.getElementById("event").textContent = JSON.stringify(f, null, 2);
  // A mutation shows the state it was reduced into and the diff it made.
  const after = stateFrameOf(f);
  const lines = f.event === "mutation" && !after ? ["(the state after this mutation has not arrived)"] : after ? diffLines(after) : [];
  const diff = document.getElementById("diff"); diff.replaceChildren();
  for (const line of lines) {
    const span = document.createElement("div");
    span.className = line.startsWith("-") ? "minus" : line.startsWith("+") ? "plus" : "";
    span.textContent = line; diff.appendChild(span);
  }
  const toggle = document.getElementById("toggle");
  toggle.hidden = f.event !== "action";
  toggle.textContent = off.has(seq) ? "toggle this action on" : "toggle this action off";
  // An action, or what one caused: the debugger stops at that action's handle.
  document.getElementById("debug").hidden = !(f.event === "action" || f.cause);
  document.getElementById("treeTitle").textContent = f.event === "mutation" && after ? "state after this mutation" : "state at this step";
  const el = document.getElementById("tree"); el.replaceChildren();
  const t = tree(stateAt[(f.event === "mutation" && after ? after.seq : seq) - base], "state"); if (t.tagName === "DETAILS") t.open = true; el.appendChild(t);
  // A step the re-run marked: the recorded state beside the one the code gives now (a
  // mutation's is its state frame's, which the re-run compares).
  const now = rerunNow.get(seq) || (f.event === "mutation" && after ? rerunNow.get(after.seq) : undefined);
  const section = document.getElementById("rerunNow");
  section.hidden = !now;
  if (now) {
    const pre = document.getElementById("rerunDiff"); pre.innerHTML = "";
    for (const line of now.diff) {
      const div = document.createElement("div");
      div.className = line.startsWith("-") ? "minus" : line.startsWith("+") ? "plus" : "";
      div.textContent = line; pre.appendChild(div);
    }
    const holder = document.getElementById("rerunTree"); holder.innerHTML = "";
    const nt = tree(now.now, "state"); if (nt.tagName === "DETAILS") nt.open = true; holder.appendChild(nt);
  }
  if (f.event === "state" || f.event === "action" || (f.event === "mutation" && after)) { send({ cmd: "jump", seq: after ? after.seq : seq }); setStatus("travel", "viewing step " + seq + " (dispatches wait)"); document.getElementById("resume").hidden = false; live = false; }
  render();
}

function setStatus(cls, text) { const s = document.getElementById("status"); s.className = cls; s.textContent = text; }
function send(message) { if (socket && socket.readyState === 1) socket.send(JSON.stringify(message)); }
function hello(since) { send({ cmd: "hello", since }); }

function setupDispatcher() {
  const select = document.getElementById("action"), fields = document.getElementById("fields");
  select.innerHTML = "";
  const actions = (session && session.actions) || {};
  for (const name of Object.keys(actions)) { const o = document.createElement("option"); o.textContent = name; select.appendChild(o); }
  const draw = () => {
    fields.innerHTML = "";
    for (const [field, type] of Object.entries(actions[select.value] || {})) {
      const input = document.createElement("input"); input.name = field; input.placeholder = field + ": " + type;
      input.dataset.type = type; fields.appendChild(input);
    }
  };
  select.onchange = draw; draw();
}
document.getElementById("dispatch").onsubmit = e => {
  e.preventDefault();
  const action = { type: document.getElementById("action").value };
  for (const input of document.querySelectorAll("#fields input")) {
    if (input.value === "") continue;
    const type = input.dataset.type.replace("?", "");
    try { action[input.name] = type === "string" ? input.value : JSON.parse(input.value); }
    catch (_) { action[input.name] = input.value; }
  }
  send({ cmd: "dispatch", action });
};
document.getElementById("rerun").onclick = () => { document.getElementById("reply").textContent = "re-running…"; send({ cmd: "rerun" }); };
document.getElementById("restart").onclick = () => send({ cmd: "restart" });
document.getElementById("toggle").onclick = () => { document.getElementById("reply").textContent = "recomputing…"; send({ cmd: "toggle", seq: selected }); };
document.getElementById("debug").onclick = () => { document.getElementById("reply").textContent = "opening in the debugger…"; send({ cmd: "debug", seq: selected }); };
document.getElementById("resume").onclick = () => { send({ cmd: "resume" }); };
// Export as a recording (`moonflow run --record`), so `moonflow replay FILE` can re-run it.
function recording() {
  const lines = [JSON.stringify({ record: "moonflow-session", format: 1, feature: session && session.feature, version: session && session.version,
                                  path: session && session.path, clock: session && session.clock, moonflow: "inspector", effects: true })];
  for (const f of events) {
    if (f.event === "action") lines.push(JSON.stringify({ input: f.action, t: f.t }));
    const e = Object.assign({}, f); delete e.seq; delete e.cause;
    if (e.step !== undefined) { e.seq = e.step; delete e.step; }
    if (e.event === "state") { delete e.patch; e.state = stateAt[f.seq - base]; }
    lines.push(JSON.stringify(e));
  }
  return lines.join("\n") + "\n";
}
document.getElementById("export").onclick = () => {
  if (base > 0) { document.getElementById("reply").textContent = "the first " + base + " frames are no longer kept, so this would not replay; record the run with --record instead"; return; }
  const blob = new Blob([recording()], { type: "application/jsonl" });
  const a = document.createElement("a"); a.href = URL.createObjectURL(blob); a.download = ((session && session.feature) || "session") + ".jsonl"; a.click();
};
rowsEl.onclick = e => { const row = e.target.closest(".row"); if (row) select(Number(row.dataset.seq)); };
timelineEl.onscroll = () => render();

let scheduled = false;
function schedule() { if (!scheduled) { scheduled = true; requestAnimationFrame(() => { scheduled = false; render(); if (live) timelineEl.scrollTop = timelineEl.scrollHeight; }); } }

function connect() {
  socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws?token=" + encodeURIComponent(token));
  socket.onopen = () => setStatus("live", "live");
  socket.onclose = () => { setStatus("off", "disconnected; reconnecting"); setTimeout(connect, 1000); };
  socket.onmessage = m => {
    const f = JSON.parse(m.data);
    switch (f.event) {
      case "session":
        // Start over when the page holds frames this run never sent, or the server's window starts past them.
        if (session === null || f.last < base + events.length - 1 || (f.first || 0) > base + events.length) {
          events.length = 0; stateAt.length = 0; document.getElementById("errors").innerHTML = "";
          order.length = 0; groupEnd.clear(); late.clear(); parentOf.clear(); lastAction = -1;
          base = f.first || 0; baseState = f.base ? f.base.state : undefined;
        }
        session = f;
        document.getElementById("feature").textContent = (f.feature || "") + " v" + (f.version || "?") + " (" + (f.path || "") + ")";
        setupDispatcher(); break;
      case "reply":
        document.getElementById("reply").textContent = !f.ok ? f.message
          : f.cmd === "debug" ? "stopped at " + actionName(f.seq) + "'s handle in the debugger" : f.queued ? "queued " + f.queued : "sent";
        break;
      case "jump": break;
      case "toggle": {
        off.clear(); for (const seq of f.off) off.add(seq);
        differs.clear(); for (const seq of f.differs) differs.add(seq);
        const section = document.getElementById("recomputed"), el = document.getElementById("recomputedTree");
        section.hidden = off.size === 0; el.innerHTML = "";
        if (off.size) { const t = tree(f.state, "state"); if (t.tagName === "DETAILS") t.open = true; el.appendChild(t); }
        document.getElementById("reply").textContent = off.size ? off.size + " actions off, " + f.differs.length + " later steps differ (marked red)" : "every action on";
        if (selected >= 0) select(selected);
        break;
      }
      case "rerun":
        differs.clear(); for (const seq of f.differs) differs.add(seq);
        rerunNow.clear(); for (const c of f.changes || []) rerunNow.set(c.seq, c);
        if (selected >= 0) select(selected);
        document.getElementById("rerun").classList.remove("hint");
        document.getElementById("reply").textContent = f.differs.length ? f.differs.length + " steps differ now (marked red)" : "the code gives every state again";
        break;
      case "inflight": {
        const el = document.getElementById("inflight");
        el.textContent = f.flights.length ? f.flights.map(x => x.what + (x.ms !== undefined ? " (" + (x.ms / 1000).toFixed(1) + " s, from #" + x.seq + ")" : "")).join(", ") : "nothing";
        return;
      }
      case "resume": live = true; document.getElementById("resume").hidden = true; setStatus("live", "live"); break;
      default: addFrame(f);
    }
    schedule();
  };
}
setInterval(() => send({ cmd: "inflight" }), 1000);
connect();
