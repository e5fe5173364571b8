// tapebox view: the page's code. Tape text only ever reaches the DOM through textContent
// (or canvas fillText); no tape data is parsed as markup.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const ROW = 28, LANE = 26, BAR = 14;

  // el builds an element: el("div", {class: "x"}, child, "text", ...). Strings become text
  // nodes, never markup.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) for (const k in attrs) {
      const v = attrs[k];
      if (v == null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of kids) {
      if (c == null || c === false) continue;
      e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  function fromB64(s) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(s);
    const bin = atob(s), out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function inflate(b64) {
    const stream = new Blob([fromB64(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  const fmtMS = (ms) => ms == null ? "–" : ms >= 60000 ? (ms / 60000).toFixed(1) + " min" : ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms.toFixed(1) + " ms";
  const fmtInt = (n) => n == null ? "–" : Number(n).toLocaleString("en-US");
  const fmtUSD = (v) => v == null ? "unknown" : (v !== 0 && Math.abs(v) < 0.01 ? "$" + v.toFixed(4) : "$" + v.toFixed(2));
  const fmtBytes = (n) => n >= 1 << 30 ? (n / (1 << 30)).toFixed(2) + " GiB" : n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + " MiB" : (n / 1024).toFixed(0) + " KiB";
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

  let IX, BLOBS = "";
  const S = {
    order: [],        // recording step indexes by request time
    shown: [],        // order filtered by the search
    sel: null,        // {side: "rec"|"rep", i}
    lanes: [],        // {side, th}
    view: { t0: 0, scale: 1 },
    diffs: new Map(), // "thread/step" -> differences
    forkAt: null,     // first differing recording step
    cache: new Map(),
    searchGen: 0,
    repFound: new Set(), // replay steps the search matched
  };

  function tapeOf(side) { return side === "rep" ? IX.replay : IX.recording; }

  async function detail(side, i) {
    const key = side + i;
    if (S.cache.has(key)) return S.cache.get(key);
    const [off, len] = tapeOf(side).steps[i].b;
    const p = inflate(BLOBS.substring(off, off + len)).then(JSON.parse);
    S.cache.set(key, p);
    if (S.cache.size > 64) S.cache.delete(S.cache.keys().next().value);
    return p;
  }

  async function start() {
    const ixEl = $("tb-index"), blobEl = $("tb-blobs");
    IX = JSON.parse(await inflate(ixEl.textContent));
    BLOBS = blobEl.textContent;
    // The DOM copy of the data is not needed any more.
    blobEl.remove();
    ixEl.remove();
    restoreTheme();
    setupIndex();
    renderHeader();
    renderLanes();
    setupTimeline();
    renderTelemetry();
    renderList();
    renderCompare();
    setupKeys();
    setupSearch();
    window.addEventListener("hashchange", fromHash);
    window.addEventListener("resize", () => { drawTimeline(); drawTelemetry(); renderRows(); });
    if (!fromHash()) fit();
    // Where a step's bar is on the timeline canvas, for tests and tools that drive the page.
    window.tapeboxView = {
      barCenter(side, thread, index) {
        const t = tapeOf(side), th = t.threads.findIndex((x) => x.id === thread);
        if (th < 0 || index >= t.threads[th].steps.length) return null;
        const s = t.steps[t.threads[th].steps[index]];
        return { x: (xOf(s.req) + Math.max(xOf(s.lb), xOf(s.req) + 1)) / 2, y: laneOf(side, th) * LANE + LANE / 2 };
      },
    };
    document.body.dataset.ready = "1";
  }

  function setupIndex() {
    const rec = IX.recording;
    S.order = rec.steps.map((_, i) => i).sort((a, b) => rec.steps[a].req - rec.steps[b].req || a - b);
    S.shown = S.order;
    if (IX.compare) {
      for (const d of IX.compare.differences) {
        const k = d.thread + "/" + d.step;
        if (!S.diffs.has(k)) S.diffs.set(k, []);
        S.diffs.get(k).push(d);
      }
      for (const i of S.order) {
        const s = rec.steps[i];
        if (S.diffs.has(rec.threads[s.th].id + "/" + s.i)) { S.forkAt = i; break; }
      }
      if (S.forkAt == null && IX.compare.differences.length) {
        // Only extra steps in the replay: the fork is after the recording's last step.
        const d = IX.compare.differences[0], th = rec.threads.findIndex((t) => t.id === d.thread);
        if (th >= 0 && rec.threads[th].steps.length) S.forkAt = rec.threads[th].steps[rec.threads[th].steps.length - 1];
      }
    }
    S.lanes = rec.threads.map((_, th) => ({ side: "rec", th }));
    if (IX.replay) IX.replay.threads.forEach((_, th) => S.lanes.push({ side: "rep", th }));
  }

  function diffsOf(side, i) {
    const t = tapeOf(side), s = t.steps[i];
    return S.diffs.get(t.threads[s.th].id + "/" + s.i) || [];
  }
  // pairOf finds the other tape's step at the same thread and index.
  function pairOf(side, i) {
    const a = tapeOf(side), b = tapeOf(side === "rec" ? "rep" : "rec");
    if (!b) return null;
    const s = a.steps[i], id = a.threads[s.th].id;
    const th = b.threads.find((t) => t.id === id);
    return th && s.i < th.steps.length ? th.steps[s.i] : null;
  }

  function renderHeader() {
    const rec = IX.recording, m = rec.meta;
    $("title").textContent = "tapebox view: " + rec.path;
    document.title = "tapebox view: " + rec.path;
    const meta = $("meta");
    const part = (label, value) => { meta.append(el("span", null, label + " ", el("b", { text: value })), "  ·  "); };
    part("tape", m.tape_id);
    part("harness", (m.harness || "?") + (m.harness_version ? " " + m.harness_version : ""));
    part("provider", m.provider || "?");
    part("model", m.model || "?");
    if (m.cwd) part("cwd", m.cwd);
    if (m.forked_from) part("forked from", forkText(m.forked_from));
    part("started", m.started_at);
    part("ended", m.ended ? m.ended.reason + (m.ended.detail ? ": " + m.ended.detail : "") : "running or cut short");
    part("threads", String(rec.threads.length));
    part("steps", String(rec.totals.steps));
    part("tool calls", String(rec.totals.tool_calls));
    part("duration", fmtMS(rec.totals.duration_ms));
    const u = rec.totals.usage;
    part("tokens", `${fmtInt(u.input_tokens)} in, ${fmtInt(u.output_tokens)} out, ${fmtInt(u.cache_read_input_tokens)} cache read, ${fmtInt(u.cache_creation_input_tokens)} cache write`);
    meta.append(el("span", { class: rec.cost.unpriced.length ? "unpriced" : "" }, "cost ", el("b", { id: "cost", text: fmtUSD(rec.cost.usd) }),
      ` (prices of ${rec.cost.prices_date}${rec.cost.unpriced.length ? "; no price for " + rec.cost.unpriced.map((x) => x || "(no model)").join(", ") : ""})`));
    if (IX.replay) {
      const rf = IX.replay.meta.forked_from;
      meta.append(el("div", { id: "beside" }, "beside: ", el("b", { text: IX.replay.path }), ` (${rf ? "a fork: " + forkText(rf) + "; " : ""}tape ${IX.replay.meta.tape_id}, ${IX.replay.totals.steps} steps, ended ${IX.replay.meta.ended ? IX.replay.meta.ended.reason : "running or cut short"}, cost ${fmtUSD(IX.replay.cost.usd)}${IX.replay.cost.unpriced.length ? ": no price for " + IX.replay.cost.unpriced.map((x) => x || "(no model)").join(", ") : ""})`));
    }
    const v = $("verdict");
    if (IX.compare) {
      v.hidden = false;
      const c = IX.compare;
      v.textContent = !c.reached_end ? "did not reach the end" : c.identical ? "identical" + notRunText(c) : `differs: ${c.differences.length} step difference(s), end state ${c.end_state.identical ? "same" : "differs"}`;
      v.className = "badge " + (c.identical ? "ok" : "bad");
    }
  }

  // forkText says what meta.forked_from says: the tape forked, the fork point, what changed.
  function forkText(f) {
    const ov = Object.entries(f.overrides || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
    const served = Object.values(f.served || {}).reduce((a, b) => a + b, 0);
    return `${f.tape_id} at thread ${f.thread} step ${f.step}; ${served} step${served === 1 ? "" : "s"} served from it${ov ? "; overrides: " + ov : ""}`;
  }

  // ---- lanes and the timeline ------------------------------------------------------------

  function renderLanes() {
    const box = $("lane-labels");
    box.replaceChildren();
    for (const ln of S.lanes) {
      const t = tapeOf(ln.side), th = t.threads[ln.th];
      let parent = "";
      if (th.parent) parent = ` ← ${th.parent[0]} ${th.parent[1]}`;
      const lab = el("div", { class: "lane-label" + (ln.side === "rep" ? " replay" : ""), title: th.id + parent, "data-thread": th.id, "data-side": ln.side },
        ln.side === "rep" ? "replay: " : "", el("b", { text: th.id }), ` (${th.steps.length})`, parent ? el("span", { class: "dim", text: parent }) : null);
      box.append(lab);
    }
    const c = $("timeline");
    c.dataset.lanes = String(IX.recording.threads.length);
    c.dataset.steps = String(IX.recording.steps.length);
  }

  function extent() {
    let lo = Infinity, hi = -Infinity;
    for (const t of [IX.recording, IX.replay]) {
      if (!t) continue;
      for (const s of t.steps) { lo = Math.min(lo, s.req); hi = Math.max(hi, s.next ?? s.lb, s.lb); }
    }
    if (IX.telemetry && IX.telemetry.t.length) { lo = Math.min(lo, IX.telemetry.t[0]); hi = Math.max(hi, IX.telemetry.t[IX.telemetry.t.length - 1]); }
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    return [lo, hi];
  }
  function canvasWidth() { return $("canvas-wrap").clientWidth || 600; }
  function fit() {
    const [lo, hi] = extent(), w = canvasWidth();
    S.view.scale = (w - 20) / (hi - lo);
    S.view.t0 = lo - 10 / S.view.scale;
    drawTimeline(); drawTelemetry();
  }
  const xOf = (t) => (t - S.view.t0) * S.view.scale;
  const tOf = (x) => x / S.view.scale + S.view.t0;

  function sizeCanvas(c, h) {
    const dpr = window.devicePixelRatio || 1, w = c.parentElement.clientWidth || 600;
    c.style.height = h + "px";
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    return [g, w];
  }

  function laneOf(side, th) { return S.lanes.findIndex((l) => l.side === side && l.th === th); }

  function drawTimeline() {
    const c = $("timeline");
    const [g, w] = sizeCanvas(c, S.lanes.length * LANE + 18);
    g.clearRect(0, 0, w, c.height);
    const col = { wait: css("--wait"), stream: css("--stream"), gap: css("--gap"), diff: css("--diff"), sel: css("--sel"), line: css("--line"), dim: css("--dim"), link: css("--link"), err: css("--err") };
    // lanes
    g.strokeStyle = col.line; g.lineWidth = 1;
    for (let l = 0; l <= S.lanes.length; l++) { g.beginPath(); g.moveTo(0, l * LANE + .5); g.lineTo(w, l * LANE + .5); g.stroke(); }
    const tLo = tOf(0), tHi = tOf(w);
    // bars
    S.lanes.forEach((ln, l) => {
      const t = tapeOf(ln.side), y = l * LANE + (LANE - BAR) / 2;
      for (const i of t.threads[ln.th].steps) {
        const s = t.steps[i], end = s.next ?? s.lb;
        if (end < tLo || s.req > tHi) continue;
        const x0 = xOf(s.req), x1 = xOf(s.fb), x2 = xOf(s.lb), x3 = xOf(end);
        g.fillStyle = col.gap; g.fillRect(x2, y + BAR / 2 - 1.5, Math.max(0, x3 - x2), 3);
        g.fillStyle = col.wait; g.fillRect(x0, y, Math.max(1, x1 - x0), BAR);
        g.fillStyle = col.stream; g.fillRect(x1, y, Math.max(1.5, x2 - x1), BAR);
        if (s.calls.some((k) => k.err)) { g.fillStyle = col.err; g.fillRect(x2 - 2, y - 2, 3, 3); }
        if (ln.side === "rep" && S.repFound.has(i)) { g.strokeStyle = col.sel; g.lineWidth = 1; g.setLineDash([2, 2]); g.strokeRect(x0 - 2, y - 2, Math.max(3, x2 - x0) + 4, BAR + 4); g.setLineDash([]); }
        if (diffsOf(ln.side, i).length) { g.strokeStyle = col.diff; g.lineWidth = 2; g.strokeRect(x0 - 1, y - 1, Math.max(3, x2 - x0) + 2, BAR + 2); }
        if (S.sel && S.sel.side === ln.side && S.sel.i === i) { g.strokeStyle = col.sel; g.lineWidth = 2.5; g.strokeRect(x0 - 3, y - 3, Math.max(3, x2 - x0) + 6, BAR + 6); }
      }
    });
    // spawn links: from the spawning step's end to the child's first request
    g.strokeStyle = col.link; g.lineWidth = 1.3;
    S.lanes.forEach((ln, l) => {
      const t = tapeOf(ln.side), th = t.threads[ln.th];
      if (th.parent_step < 0 || !th.steps.length) return;
      const ps = t.steps[th.parent_step], pl = laneOf(ln.side, ps.th);
      if (pl < 0) return;
      const x0 = xOf(ps.lb), y0 = pl * LANE + LANE / 2, x1 = xOf(t.steps[th.steps[0]].req), y1 = l * LANE + LANE / 2;
      g.beginPath(); g.moveTo(x0, y0); g.bezierCurveTo(x0 + 20, y0, x1 - 20, y1, x1, y1); g.stroke();
      g.beginPath(); g.arc(x1, y1, 2.5, 0, 7); g.fillStyle = col.link; g.fill();
    });
    // fork point
    if (S.forkAt != null) {
      const x = xOf(IX.recording.steps[S.forkAt].req);
      g.strokeStyle = col.diff; g.setLineDash([4, 3]); g.lineWidth = 1.5;
      g.beginPath(); g.moveTo(x, 0); g.lineTo(x, S.lanes.length * LANE); g.stroke(); g.setLineDash([]);
      g.fillStyle = col.diff; g.font = "11px system-ui, sans-serif"; g.fillText("first difference", x + 3, S.lanes.length * LANE - 3);
    }
    // axis
    drawAxis(g, w, S.lanes.length * LANE, col.dim);
  }

  function drawAxis(g, w, y, color) {
    const span = (tOf(w) - tOf(0));
    const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];
    let step = steps.find((s) => s * S.view.scale >= 80) || steps[steps.length - 1];
    if (span / step > 50) step = span / 10;
    g.fillStyle = color; g.font = "11px system-ui, sans-serif"; g.strokeStyle = color; g.lineWidth = 1;
    for (let t = Math.ceil(tOf(0) / step) * step; t <= tOf(w); t += step) {
      const x = Math.round(xOf(t)) + .5;
      g.beginPath(); g.moveTo(x, y); g.lineTo(x, y + 4); g.stroke();
      g.fillText(fmtMS(t), x + 2, y + 14);
    }
  }

  function hit(x, y) {
    const l = Math.floor(y / LANE);
    if (l < 0 || l >= S.lanes.length) return null;
    const ln = S.lanes[l], t = tapeOf(ln.side), tm = tOf(x), slack = 4 / S.view.scale;
    let best = null;
    for (const i of t.threads[ln.th].steps) {
      const s = t.steps[i];
      if (tm >= s.req - slack && tm <= Math.max(s.lb, s.req) + slack) best = i;
    }
    return best == null ? null : { side: ln.side, i: best };
  }

  function setupTimeline() {
    const c = $("timeline");
    let drag = null;
    c.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, t0: S.view.t0, moved: false }; c.setPointerCapture(e.pointerId); });
    c.addEventListener("pointermove", (e) => {
      const r = c.getBoundingClientRect();
      $("cursor").textContent = fmtMS(tOf(e.clientX - r.left));
      if (!drag) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) { drag.moved = true; c.classList.add("dragging"); }
      S.view.t0 = drag.t0 - dx / S.view.scale;
      drawTimeline(); drawTelemetry();
    });
    c.addEventListener("pointerup", (e) => {
      const r = c.getBoundingClientRect();
      if (drag && !drag.moved) { const h = hit(e.clientX - r.left, e.clientY - r.top); if (h) select(h.side, h.i, true); }
      drag = null; c.classList.remove("dragging");
    });
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = c.getBoundingClientRect();
      zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left);
    }, { passive: false });
    $("zoom-in").onclick = () => zoom(1.6);
    $("zoom-out").onclick = () => zoom(1 / 1.6);
    $("zoom-fit").onclick = fit;
  }
  function zoom(f, x) {
    if (x == null) x = canvasWidth() / 2;
    const t = tOf(x);
    S.view.scale = Math.min(Math.max(S.view.scale * f, 1e-7), 2000);
    S.view.t0 = t - x / S.view.scale;
    drawTimeline(); drawTelemetry();
  }
  function reveal(t0, t1) {
    const w = canvasWidth();
    if (xOf(t0) < 0 || xOf(t1) > w) { S.view.t0 = (t0 + t1) / 2 - w / 2 / S.view.scale; }
  }

  // ---- telemetry -------------------------------------------------------------------------

  function renderTelemetry() {
    const tm = IX.telemetry;
    if (!tm || !tm.t.length) return;
    $("telemetry-wrap").hidden = false;
    const maxMem = Math.max(...tm.mem.filter((x) => x >= 0));
    $("telemetry-label").textContent = `telemetry ${tm.path} (${tm.t.length} samples, ${tm.source || "?"}): CPU % (amber, 0 to ${Math.max(100, Math.ceil(Math.max(...tm.cpu.filter((x) => x != null), 0) / 100) * 100)}) and memory (green, peak ${fmtBytes(maxMem)}${tm.limit > 0 ? ", limit " + fmtBytes(tm.limit) : ""})`;
  }
  function drawTelemetry() {
    const tm = IX.telemetry;
    if (!tm || !tm.t.length) return;
    const c = $("telemetry"), H = 60;
    const [g, w] = sizeCanvas(c, H);
    g.clearRect(0, 0, w, H);
    const cpuMax = Math.max(100, Math.ceil(Math.max(...tm.cpu.filter((x) => x != null), 0) / 100) * 100);
    const memMax = Math.max(1, ...tm.mem);
    const line = (vals, max, color) => {
      g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
      let pen = false;
      for (let k = 0; k < tm.t.length; k++) {
        const v = vals[k];
        if (v == null || v < 0) { pen = false; continue; }
        const x = xOf(tm.t[k]), y = H - 2 - (v / max) * (H - 6);
        if (pen) g.lineTo(x, y); else { g.moveTo(x, y); pen = true; }
      }
      g.stroke();
    };
    g.strokeStyle = css("--line"); g.strokeRect(.5, .5, w - 1, H - 1);
    line(tm.cpu, cpuMax, css("--cpu"));
    line(tm.mem, memMax, css("--mem"));
  }

  // ---- the step list (virtualised) -------------------------------------------------------

  function renderList() {
    const list = $("list");
    list.addEventListener("scroll", renderRows);
    new ResizeObserver(() => renderRows()).observe(list);
    list.addEventListener("click", (e) => {
      const r = e.target.closest(".step-row");
      if (r) select("rec", Number(r.dataset.step), true);
    });
    updateCount();
    renderRows();
  }
  function updateCount() {
    const n = IX.recording.steps.length;
    $("list-count").textContent = S.shown.length === n ? `${n} steps` : `${S.shown.length} of ${n} steps match`;
    $("list-inner").style.height = S.shown.length * ROW + "px";
  }
  function renderRows() {
    const list = $("list"), inner = $("list-inner");
    const first = Math.max(0, Math.floor(list.scrollTop / ROW) - 5);
    const last = Math.min(S.shown.length, Math.ceil((list.scrollTop + (list.clientHeight || 400)) / ROW) + 5);
    const rec = IX.recording, rows = [];
    for (let k = first; k < last; k++) {
      const i = S.shown[k], s = rec.steps[i], th = rec.threads[s.th];
      const names = s.calls.map((c) => c.name + (c.child >= 0 ? "→" + rec.threads[c.child].id : "")).join(", ") || (s.stop || "");
      const differs = diffsOf("rec", i).length > 0;
      const row = el("div", {
        class: "step-row" + (S.sel && S.sel.side === "rec" && S.sel.i === i ? " sel" : ""), role: "option",
        "data-step": i, "data-thread": th.id, "data-index": s.i, "aria-selected": S.sel && S.sel.i === i && S.sel.side === "rec" ? "true" : "false",
      },
        el("span", { class: "num", text: "#" + (k + 1) }),
        el("span", { class: "th", text: th.id + "·" + s.i }),
        el("span", { class: "tools", text: names }),
        s.calls.some((c) => c.err) ? el("span", { class: "errflag", title: "a tool result is an error", text: "!" }) : null,
        differs ? el("span", { class: "flag", title: "the replay differs here", text: "≠" }) : null,
        el("span", { class: "dim", text: fmtMS(s.lb - s.req) }));
      row.style.top = k * ROW + "px";
      rows.push(row);
    }
    inner.replaceChildren(...rows);
  }
  function scrollToRow(i) {
    const k = S.shown.indexOf(i);
    if (k < 0) return;
    const list = $("list"), top = k * ROW;
    if (top < list.scrollTop || top + ROW > list.scrollTop + list.clientHeight) list.scrollTop = top - list.clientHeight / 2;
  }

  // ---- selection, fragment, keys ---------------------------------------------------------

  function stepKey(side, i) {
    const t = tapeOf(side), s = t.steps[i];
    return (side === "rep" ? "replay/" : "") + t.threads[s.th].id + "/" + s.i;
  }
  function fromHash() {
    const h = decodeURIComponent(location.hash.replace(/^#/, ""));
    const m = /^step=(replay\/)?(.+)\/(\d+)$/.exec(h);
    if (!m) return false;
    const side = m[1] ? "rep" : "rec", t = tapeOf(side);
    if (!t) return false;
    const th = t.threads.find((x) => x.id === m[2]);
    if (!th || Number(m[3]) >= th.steps.length) return false;
    if (!S.view.scale || S.view.scale === 1) fit();
    select(side, th.steps[Number(m[3])], false);
    return true;
  }
  function select(side, i, updateHash) {
    S.sel = { side, i };
    if (updateHash) history.replaceState(null, "", "#step=" + encodeURIComponent(stepKey(side, i)).replace(/%2F/g, "/"));
    const s = tapeOf(side).steps[i];
    reveal(s.req, s.lb);
    drawTimeline(); drawTelemetry();
    if (side === "rec") scrollToRow(i);
    renderRows();
    renderDetail(side, i);
  }
  function move(d) {
    if (!S.shown.length) return;
    let k = S.sel && S.sel.side === "rec" ? S.shown.indexOf(S.sel.i) : -1;
    k = k < 0 ? (d > 0 ? 0 : S.shown.length - 1) : Math.min(S.shown.length - 1, Math.max(0, k + d));
    select("rec", S.shown[k], true);
  }
  function setupKeys() {
    document.addEventListener("keydown", (e) => {
      if (e.target instanceof HTMLInputElement) {
        if (e.key === "Escape") { e.target.value = ""; runSearch(""); e.target.blur(); }
        if (e.key === "Enter") { e.target.blur(); if (S.shown.length) select("rec", S.shown[0], true); }
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      switch (e.key) {
        case "j": case "ArrowDown": move(1); e.preventDefault(); break;
        case "k": case "ArrowUp": move(-1); e.preventDefault(); break;
        case "/": $("search").focus(); e.preventDefault(); break;
        case "+": case "=": zoom(1.6); break;
        case "-": zoom(1 / 1.6); break;
        case "0": fit(); break;
      }
    });
    $("theme").onclick = () => {
      const dark = document.documentElement.dataset.theme ? document.documentElement.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
      document.documentElement.dataset.theme = dark ? "light" : "dark";
      try { localStorage.setItem("tapebox-view-theme", document.documentElement.dataset.theme); } catch (_) { /* file: pages may have no storage */ }
      drawTimeline(); drawTelemetry();
      if (S.sel) renderDetail(S.sel.side, S.sel.i);
    };
  }
  function restoreTheme() {
    try { const t = localStorage.getItem("tapebox-view-theme"); if (t === "light" || t === "dark") document.documentElement.dataset.theme = t; } catch (_) { /* no storage */ }
  }

  // ---- search ----------------------------------------------------------------------------

  function setupSearch() {
    let timer = null;
    $("search").addEventListener("input", (e) => { clearTimeout(timer); timer = setTimeout(() => runSearch(e.target.value), 150); });
  }
  function haystack(d) {
    const parts = [];
    for (const c of d.calls || []) { parts.push(c.name, JSON.stringify(c.input)); }
    for (const r of d.results || []) { parts.push(blocksText(r.content)); }
    return parts.join("\n").toLowerCase();
  }
  async function runSearch(q) {
    const gen = ++S.searchGen, rec = IX.recording;
    q = q.trim().toLowerCase();
    const status = $("search-status"), repBox = $("search-replay");
    S.repFound = new Set();
    repBox.replaceChildren();
    repBox.hidden = true;
    if (!q) { S.shown = S.order; status.textContent = ""; updateCount(); renderRows(); drawTimeline(); return; }
    // Tool names and thread ids are in the index: those matches show at once; inputs and
    // results are searched in each step's detail, decompressed a batch at a time. The
    // replay, when there is one, is searched too: its matches are listed apart (the list
    // holds the recording's steps) and ringed on the timeline.
    const found = new Set();
    const quick = (t, s) => s.calls.some((c) => c.name.toLowerCase().includes(q)) || t.threads[s.th].id.toLowerCase() === q;
    for (const i of S.order) if (quick(rec, rec.steps[i])) found.add(i);
    const rep = IX.replay;
    if (rep) rep.steps.forEach((s, i) => { if (quick(rep, s)) S.repFound.add(i); });
    const show = () => { S.shown = S.order.filter((i) => found.has(i)); updateCount(); renderRows(); showReplayMatches(); };
    show();
    const todo = S.order.filter((i) => !found.has(i) && rec.steps[i].calls.length).map((i) => ["rec", i]);
    if (rep) rep.steps.forEach((s, i) => { if (!S.repFound.has(i) && s.calls.length) todo.push(["rep", i]); });
    for (let k = 0; k < todo.length; k += 32) {
      if (gen !== S.searchGen) return;
      status.textContent = `searching ${k} of ${todo.length}…`;
      const batch = todo.slice(k, k + 32);
      const ds = await Promise.all(batch.map(([side, i]) => {
        const [off, len] = tapeOf(side).steps[i].b;
        return inflate(BLOBS.substring(off, off + len)).then(JSON.parse);
      }));
      if (gen !== S.searchGen) return;
      batch.forEach(([side, i], n) => { if (haystack(ds[n]).includes(q)) (side === "rec" ? found : S.repFound).add(i); });
      show();
    }
    status.textContent = `${found.size} match${found.size === 1 ? "" : "es"}` + (rep ? `, ${S.repFound.size} in the replay` : "");
  }
  // showReplayMatches lists the replay's matching steps as links, and rings them on the timeline.
  function showReplayMatches() {
    const box = $("search-replay"), rep = IX.replay;
    if (!rep) return;
    const is = [...S.repFound].sort((a, b) => rep.steps[a].req - rep.steps[b].req || a - b);
    box.hidden = is.length === 0;
    box.replaceChildren(...(is.length ? [el("span", { class: "dim", text: "in the replay: " })] : []),
      ...is.slice(0, 50).map((i) => el("button", { class: "linkish", type: "button", "data-step": stepKey("rep", i), text: rep.threads[rep.steps[i].th].id + "·" + rep.steps[i].i, onclick: () => select("rep", i, true) })),
      ...(is.length > 50 ? [el("span", { class: "dim", text: ` and ${is.length - 50} more` })] : []));
    drawTimeline();
  }

  // ---- step detail -----------------------------------------------------------------------

  function blocksText(bs) { return (bs || []).filter((b) => b.type === "text").map((b) => b.text).join(""); }
  function resultText(r) {
    // As compare flattens it: text blocks as they are, other blocks as JSON, one per line.
    return (r.content || []).map((b) => b.type === "text" ? b.text : JSON.stringify(b)).join("\n");
  }
  function prettyJSON(v) {
    try { return JSON.stringify(typeof v === "string" ? JSON.parse(v) : v, null, 2); } catch (_) { return String(v); }
  }

  function blockView(b) {
    switch (b.type) {
      case "text": return el("div", { class: "block" }, el("pre", { text: b.text }));
      case "thinking": return el("div", { class: "block thinking" }, el("div", { class: "role", text: "thinking" }), el("pre", { text: b.text || "(redacted or empty)" }));
      case "tool_use": return el("div", { class: "block" }, el("div", { class: "role", text: "tool call " + b.name + " " + (b.id || "") }), el("pre", { text: prettyJSON(b.input) }));
      case "tool_result": return el("div", { class: "block" }, el("div", { class: "role", text: "tool result " + (b.tool_call_id || "") + (b.is_error ? " (error)" : "") }), el("pre", { text: resultText(b) }));
      case "image": return el("div", { class: "block dim", text: "[image]" });
      default: return el("div", { class: "block" }, el("div", { class: "role", text: b.type }), el("pre", { text: prettyJSON(b.raw ?? b) }));
    }
  }

  function chunkPlot(d, s) {
    const c = el("canvas", { class: "chunkplot", "aria-label": `${d.chunks.length} chunks arriving over time` });
    requestAnimationFrame(() => {
      if (!c.isConnected) return; // another step was shown meanwhile
      const [g, w] = sizeCanvas(c, 70), H = 70, n = d.chunks.length;
      const span = Math.max(1, d.chunks[n - 1] || 1);
      g.fillStyle = css("--stream"); g.strokeStyle = css("--dim");
      for (let k = 0; k < n; k++) {
        const x = 6 + (d.chunks[k] / span) * (w - 12), y = H - 14 - (k / Math.max(1, n - 1)) * (H - 24);
        g.fillRect(x - 1, y - 1, 2.5, 2.5);
      }
      g.fillStyle = css("--dim"); g.font = "11px system-ui, sans-serif";
      g.fillText("0", 4, H - 2); g.textAlign = "right"; g.fillText(fmtMS(span) + " after the request", w - 4, H - 2); g.textAlign = "left";
      const fbx = 6 + ((s.fb - s.req) / span) * (w - 12);
      g.strokeStyle = css("--wait"); g.beginPath(); g.moveTo(fbx, 0); g.lineTo(fbx, H - 12); g.stroke();
    });
    return c;
  }

  function diffView(edits) {
    const pre = el("pre", { class: "inline-diff" });
    for (const [op, text] of edits) {
      if (op === "=") pre.append(document.createTextNode(text));
      else if (op === "-") pre.append(el("del", { text }));
      else if (op === "+") pre.append(el("ins", { text }));
      else pre.append(el("span", { class: "fold", text: `… ${text} equal lines …` }));
    }
    return pre;
  }

  async function renderDetail(side, i) {
    const pane = $("detail-pane"), t = tapeOf(side), s = t.steps[i], th = t.threads[s.th];
    const token = {};
    pane.dataset.token = "";
    S.detailToken = token;
    let d, other = null, oi = pairOf(side, i);
    try {
      d = await detail(side, i);
      if (oi != null) other = await detail(side === "rec" ? "rep" : "rec", oi);
    } catch (e) { pane.replaceChildren(el("p", { class: "is-error", text: "cannot decode this step: " + e })); return; }
    if (S.detailToken !== token) return;
    const u = s.u, diffs = diffsOf(side, i);
    const kids = [];
    kids.push(el("h2", null, (side === "rep" ? "replay: " : "") + `thread ${th.id}, step ${s.i}`,
      diffs.length ? el("span", { class: "diff-mark", text: "  ≠ differs" }) : null));
    if (th.parent && s.i === 0) {
      kids.push(el("p", null, "spawned by ", el("button", { class: "linkish", type: "button", text: `${th.parent[1]} in ${th.parent[0]}`, onclick: () => th.parent_step >= 0 && select(side, th.parent_step, true) })));
    }
    const dl = el("dl", { class: "kv" });
    const kv = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: v }));
    kv("model", s.model || "?");
    kv("request", `${d.path} (${d.stream ? "stream" : "JSON"}), status ${d.status}`);
    kv("timing", `sent ${fmtMS(s.req)}, first byte +${fmtMS(s.fb - s.req)}, last byte +${fmtMS(s.lb - s.req)}` + (s.next != null ? `, tool gap ${fmtMS(s.next - s.lb)}, next request at ${fmtMS(s.next)}` : ", last step of its thread"));
    kv("stop reason", s.stop || "–");
    kv("usage", `${fmtInt(u[0])} in, ${fmtInt(u[1])} out (${fmtInt(u[4])} reasoning), ${fmtInt(u[2])} cache read, ${fmtInt(u[3])} cache write`);
    kv("cost", s.usd == null ? `unknown: the price table of ${t.cost.prices_date} has no price for ${s.model || "(no model)"} (tapebox view --prices FILE)` : `${fmtUSD(s.usd)} (prices of ${t.cost.prices_date})`);
    if (d.params && Object.keys(d.params).length) kv("params", Object.entries(d.params).filter(([k]) => k !== "model").map(([k, v]) => k + "=" + JSON.stringify(v)).join(", ") || "–");
    kids.push(dl);
    for (const df of diffs.filter((x) => !x.call_id || (x.field !== "tool_result" && x.field !== "tool_call.input"))) {
      kids.push(el("p", { class: "diff-mark" }, `${df.field} differs: recorded ${df.recorded}, replayed ${df.replayed}`));
    }
    if (d.chunks.length) { kids.push(el("h3", { text: `chunk arrival (${d.chunks.length} chunks)` }), chunkPlot(d, s)); }
    if (d.system != null) kids.push(el("details", null, el("summary", { text: `system prompt (${d.system.length} characters)` }), el("pre", { text: d.system })));
    kids.push(el("h3", { text: `new messages (${d.messages.length}; ${d.carried} carried over${d.dropped ? ", " + d.dropped + " shown on the previous step" : ""})` }));
    for (const m of d.messages) {
      const box = el("div", { class: "block " + m.role }, el("div", { class: "role", text: m.role }));
      for (const b of m.content || []) box.append(blockView(b));
      kids.push(box);
    }
    kids.push(el("h3", { text: "response" }));
    const resp = d.content.filter((b) => b.type !== "tool_use");
    if (!resp.length) kids.push(el("p", { class: "dim", text: "no text" }));
    for (const b of resp) kids.push(blockView(b));
    kids.push(el("h3", { text: `tool calls (${d.calls.length})` }));
    const oResults = other ? new Map(other.results.map((r) => [r.tool_call_id, r])) : null;
    d.calls.forEach((c, k) => {
      const r = d.results.find((x) => x.tool_call_id === c.id);
      const cd = diffs.filter((x) => x.call_id === c.id);
      const box = el("div", { class: "call" + (cd.length ? " differs" : ""), "data-call": c.id });
      const ci = s.calls[k];
      box.append(el("div", { class: "head" }, el("span", { class: "name", text: c.name }), el("span", { class: "dim", text: c.id }),
        r && r.is_error ? el("span", { class: "is-error", text: "error" }) : null,
        r && r.duration_ms != null ? el("span", { class: "dim", text: "ran " + fmtMS(r.duration_ms) }) : null,
        ci && ci.child >= 0 ? el("button", { class: "linkish", type: "button", text: "→ thread " + t.threads[ci.child].id, onclick: () => t.threads[ci.child].steps.length && select(side, t.threads[ci.child].steps[0], true) }) : null,
        cd.length ? el("span", { class: "diff-mark", text: "≠ " + cd.map((x) => x.field).join(", ") }) : null));
      box.append(el("div", { class: "role", text: "input" }), el("pre", { class: "input", text: prettyJSON(c.input) }));
      const own = el("div", null, el("div", { class: "role", text: side === "rep" ? "replayed result" : "recorded result" }),
        el("pre", { class: "result", text: r ? resultText(r) : "(no result in the tape)" }));
      if (oResults) {
        const o = oResults.get(c.id);
        const theirs = el("div", null, el("div", { class: "role", text: side === "rep" ? "recorded result" : "replayed result" }),
          el("pre", { class: "result other", text: o ? resultText(o) : "(no result)" }));
        box.append(side === "rep" ? el("div", { class: "pair" }, theirs, own) : el("div", { class: "pair" }, own, theirs));
      } else box.append(own);
      for (const x of cd) {
        if (x.diff) box.append(el("div", { class: "role diff-mark", text: x.field + " differs (as compare sees it: volatile fields masked, identifiers substituted): recorded → replayed" }), diffView(x.diff));
        else box.append(el("p", { class: "diff-mark", text: `${x.field}: recorded ${x.recorded}, replayed ${x.replayed}` }));
      }
      kids.push(box);
    });
    pane.replaceChildren(...kids);
    pane.dataset.step = stepKey(side, i);
  }

  // ---- replay compared -------------------------------------------------------------------

  // notRunText says how many of the replay's results were copied from the recording, not run.
  function notRunText(c) {
    const n = (c.not_run || []).length;
    return n ? `, ${n} of ${c.results_replayed} tool results not run` : "";
  }

  function renderCompare() {
    const c = IX.compare;
    if (!c) return;
    const pane = $("compare-pane");
    pane.hidden = false;
    const kids = [el("strong", { text: `Compared with ${IX.replay.path}: ${c.identical ? "IDENTICAL" + notRunText(c) : c.reached_end ? "DIFFERS" : "DID NOT REACH THE END"}` }),
      el("span", { class: "dim", text: ` (${c.steps_compared} steps compared; replay ended ${c.ended})` })];
    if ((c.not_run || []).length) {
      const tools = [...new Set(c.not_run.map((n) => n.tool))].sort().join(", ");
      kids.push(el("div", { text: `Not run (their results were copied from the recording, so they prove nothing): ${tools}` }));
    }
    const ul = el("ul", { id: "differences" });
    for (const d of c.differences) {
      const rec = IX.recording, th = rec.threads.find((x) => x.id === d.thread);
      const target = th && d.step < th.steps.length ? th.steps[d.step] : null;
      ul.append(el("li", null, target != null ? el("button", { class: "linkish", type: "button", text: `thread ${d.thread} step ${d.step}`, onclick: () => select("rec", target, true) }) : `thread ${d.thread} step ${d.step}`,
        `: ${d.field}${d.tool ? " of " + d.tool : ""}${d.call_id ? " (" + d.call_id + ")" : ""} differs` + (d.diff ? "" : `: recorded ${clip(d.recorded)}, replayed ${clip(d.replayed)}`)));
    }
    if (c.differences.length) kids.push(el("div", { text: "Step differences:" }), ul);
    const es = c.end_state;
    const esl = el("ul", { id: "end-state" });
    for (const ch of es.changes || []) esl.append(el("li", { text: changeText(ch) }));
    kids.push(el("div", { text: "End state: " + (!es.compared ? (es.identical ? "not compared: " : "DIFFERS: ") + (es.note || "") : es.identical ? `identical (${es.recorded} entries)` : `${es.changes.length} difference(s) (${es.recorded} entries recorded, ${es.replayed} replayed)`) }), esl);
    if (c.identifiers.length) {
      const il = el("ul");
      for (const l of c.identifiers) il.append(el("li", { text: `${clip(l.recorded)} → ${clip(l.replayed)} (${l.evidence})` }));
      kids.push(el("div", { text: "Identifiers learned:" }), il);
    }
    pane.replaceChildren(...kids);
  }
  function clip(s) { s = String(s); return s.length > 200 ? s.slice(0, 200) + "…" : s; }
  function changeText(c) {
    if (c.kind === "missing") return `${c.path}: missing: recorded ${c.recorded}`;
    if (c.kind === "extra") return `${c.path}: extra: ${c.replayed}`;
    return `${c.path}: ${c.what} differs: recorded ${c.recorded}, replayed ${c.replayed}`;
  }

  start().catch((e) => {
    const f = $("fatal");
    f.hidden = false;
    f.textContent = "tapebox view could not show this tape: " + (e && e.stack || e);
    document.body.dataset.ready = "error";
  });
})();
