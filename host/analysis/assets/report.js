// SPDX-License-Identifier: GPL-2.0
/*
 * report.js - the page of report.html, built from the report inlined in
 * <script type="application/json" id="sbrig-report"> (report.json, schema
 * version 1, host/doc/report-format.md, its trace packed by the renderer:
 * host/analysis/report-html.c says how). Charts are dygraphs (Debian's
 * libjs-dygraphs, inlined before this script).
 *
 * Sections, in order: the headline figures, findings, the power trace
 * with the blocker timeline beneath it on the same time axis, energy per
 * blocker, wakeups, phases, capture and provenance.
 *
 * The trace. Its x axis is seconds since the capture's first sample. The
 * power chart draws min/max/mean envelopes (dygraphs' customBars) of the
 * coarsest level over the whole capture; when the visible range changes
 * (drag to zoom, shift-drag to pan, double-click to reset), the visible
 * range (and half of it on each side) is redrawn from the finest level
 * that has at most MAX_BUCKETS buckets there and whose buckets are wider
 * than two sample intervals (finer ones would be mostly empty), and from
 * the raw samples where there are some, when they are at most MAX_RAW. The timeline is a
 * second dygraph whose only series is drawn by timelinePlotter(): one row
 * per blocker (its active spans), a row of suspended stretches and one of
 * wakeups (stimulus to resume). Both charts share one x range: whichever
 * the user zooms, the other follows. Suspended stretches and gaps are
 * shaded on both.
 *
 * window.sbrig is for tests and for the curious, in the console:
 *   sbrig.report           the report as inlined (trace packed)
 *   sbrig.power, sbrig.timeline, sbrig.histogram, sbrig.phases
 *                          the Dygraph objects (null when not drawn)
 *   sbrig.range()          visible x range, [lo, hi] in s from the start
 *   sbrig.zoom(lo, hi)     show [lo, hi] (s from the start) on both charts
 *   sbrig.zoomNs(a, b)     the same in the report's host-time ns
 *   sbrig.reset()          the whole capture
 *   sbrig.source()         what the power chart draws in the visible range:
 *                          { kind: 'level'|'raw'|'none', bucket_ns, points }
 *   sbrig.trace            the trace as decoded: { levels, raw }
 *   sbrig.ready            true once everything is drawn; the window gets
 *                          an 'sbrig-ready' event then, and 'sbrig-range'
 *                          (detail: { range, source }) after each change
 *                          of the visible range
 */
(function () {
  'use strict';

  const MAX_BUCKETS = 5000;    // envelope buckets per redraw of the visible range
  const MAX_RAW = 20000;       // raw samples per redraw
  const Y_LABEL_W = 170;       // both charts: same plot area, same x axis
  const ROW_PX = 22;           // a timeline row
  const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
    '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

  const report = JSON.parse(document.getElementById('sbrig-report').textContent);
  const cap = report.capture;
  const T0 = cap.start_ns;
  const DUR = Math.max((cap.end_ns - cap.start_ns) / 1e9, 0);
  const toS = (ns) => (ns - T0) / 1e9;

  /* ---- formatting: readable units ------------------------------------ */

  // @v with about @digits significant digits
  function num(v, digits) {
    const a = Math.abs(v);
    if (a === 0) return '0';
    if (a !== 0 && a < 10) return v.toFixed(digits);
    if (a < 100) return v.toFixed(Math.max(digits - 1, 0));
    return v.toFixed(Math.max(digits - 2, 0));
  }
  function fmtEnergy(uJ) {
    if (uJ === null || uJ === undefined) return '\u2013';
    const a = Math.abs(uJ);
    if (a >= 1e6) return num(uJ / 1e6, 3) + ' J';
    if (a >= 1e3) return num(uJ / 1e3, 3) + ' mJ';
    return num(uJ, 3) + ' \u00b5J';
  }
  function fmtPower(uW) {
    if (uW === null || uW === undefined || Number.isNaN(uW)) return '\u2013';
    const a = Math.abs(uW);
    if (a >= 1e6) return num(uW / 1e6, 3) + ' W';
    if (a >= 1e3) return num(uW / 1e3, 3) + ' mW';
    return num(uW, 3) + ' \u00b5W';
  }
  function fmtDur(ns) {
    if (ns === null || ns === undefined) return '\u2013';
    const a = Math.abs(ns);
    if (a >= 3600e9) {
      const h = Math.floor(a / 3600e9), m = Math.floor((a % 3600e9) / 60e9);
      return (ns < 0 ? '-' : '') + h + ' h ' + String(m).padStart(2, '0') + ' min';
    }
    if (a >= 120e9) {
      const m = Math.floor(a / 60e9), s = Math.round((a % 60e9) / 1e9);
      return (ns < 0 ? '-' : '') + m + ' min ' + String(s).padStart(2, '0') + ' s';
    }
    if (a >= 1e9) return num(ns / 1e9, 3) + ' s';
    if (a >= 1e6) return num(ns / 1e6, 3) + ' ms';
    if (a >= 1e3) return num(ns / 1e3, 3) + ' \u00b5s';
    return ns + ' ns';
  }
  // a moment: seconds since the capture's first sample
  function fmtAt(ns) {
    if (ns === null || ns === undefined) return '\u2013';
    return fmtSeconds(toS(ns), DUR);
  }
  function fmtSeconds(s, span) {
    if (span > 300) {
      const neg = s < 0; let t = Math.round(Math.abs(s));
      const h = Math.floor(t / 3600); t -= h * 3600;
      const m = Math.floor(t / 60), sec = t - m * 60;
      return (neg ? '-' : '') + (h ? h + ':' + String(m).padStart(2, '0') : String(m)) +
        ':' + String(sec).padStart(2, '0');
    }
    const d = Math.max(0, Math.min(9, Math.ceil(-Math.log10(Math.max(span, 1e-9) / 10))));
    return s.toFixed(d) + ' s';
  }
  function fmtCount(n) { return n === null || n === undefined ? '\u2013' : n.toLocaleString('en-US'); }
  function pct(part, whole) { return whole > 0 ? (100 * part / whole).toFixed(1) + ' %' : '\u2013'; }
  // dygraphs writes axis labels as HTML: escape what comes from the target
  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
  }

  /* ---- DOM ------------------------------------------------------------- */

  // el('td', { class: 'num', title: 'x' }, 'text', childNode, ...): text is text
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') e.className = v;
      else if (k === 'data') Object.assign(e.dataset, v);
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, v);
    }
    for (const k of kids.flat()) {
      if (k === null || k === undefined) continue;
      e.appendChild(typeof k === 'string' || typeof k === 'number' ? document.createTextNode(String(k)) : k);
    }
    return e;
  }
  function section(id, title, ...kids) {
    return el('section', { id }, el('h2', null, title), ...kids);
  }
  function empty(text) { return el('p', { class: 'empty' }, text); }

  /* ---- the trace, unpacked ----------------------------------------------- */

  function b64(s) {
    const bin = atob(s), u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return new DataView(u.buffer);
  }
  function floats(v, n) {
    if (Array.isArray(v)) return Float64Array.from(v, (x) => (x === null ? NaN : x));
    const dv = b64(v), out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
    return out;
  }
  // levels: finest first; each { bucket_ns, t0 (s), b (s), n, min, max, mean (uW) }
  const levels = report.trace.levels.map((lv) => {
    const n = lv.n !== undefined ? lv.n : lv.min.length;
    return { bucket_ns: lv.bucket_ns, t0: toS(lv.t0_ns), b: lv.bucket_ns / 1e9, n,
      min: floats(lv.min, n), max: floats(lv.max, n), mean: floats(lv.mean, n) };
  }).filter((L) => L.n > 0).sort((a, b) => a.bucket_ns - b.bucket_ns);
  const coarse = levels.length ? levels[levels.length - 1] : null;
  // the mean sample interval: levels finer than two of it are mostly empty
  const SAMPLE_NS = cap.samples > 1 ? cap.duration_ns / (cap.samples - 1) : 0;
  // raw: segments by time, each { t (s), p (uW), n, gap: dt above which a gap is drawn }
  const raw = report.trace.raw.map((r) => {
    let n, t, p;
    if (report.trace.packed) {
      n = r.n; t = new Float64Array(n); p = floats(r.power_uW, n);
      let ns = r.t0_ns - T0;
      if (r.dt16 !== undefined) {        // steady rate: base + uint16 offsets
        const dv = b64(r.dt16);
        t[0] = ns / 1e9;
        for (let i = 1; i < n; i++) { ns += r.dt_base_ns + dv.getUint16(2 * (i - 1), true); t[i] = ns / 1e9; }
      } else {
        const dv = b64(r.dt_ns);
        for (let i = 0; i < n; i++) { ns += dv.getUint32(4 * i, true); t[i] = ns / 1e9; }
      }
    } else {
      n = r.t_ns.length; t = Float64Array.from(r.t_ns, toS); p = floats(r.power_uW, n);
    }
    const d = [];
    for (let i = 1; i < n; i += Math.max(1, Math.floor(n / 512))) d.push(t[i] - t[i - 1]);
    d.sort((a, b) => a - b);
    return { t, p, n, gap: d.length ? 10 * d[d.length >> 1] : Infinity };
  }).filter((r) => r.n > 0).sort((a, b) => a.t[0] - b.t[0]);
  const gaps = report.gaps.map((g) => [toS(g.t_ns), toS(g.t_ns + g.duration_ns)]);
  const suspended = [];
  for (const st of report.trace.states)
    if (st.state === 'suspended') for (const [a, b] of st.spans) suspended.push([toS(a), toS(b)]);
  suspended.sort((a, b) => a[0] - b[0]);

  // first index of sorted @arr (by @key) whose key >= x
  function lowerBound(arr, x, key) {
    let lo = 0, hi = arr.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((key ? key(arr[mid]) : arr[mid]) < x) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  // first bucket of @L whose centre is >= x
  function centreIdx(L, x) {
    const i = Math.ceil((x - L.t0) / L.b - 0.5);
    return Math.min(Math.max(i, 0), L.n);
  }
  function pushLevel(rows, L, i0, i1) {
    for (let i = i0; i < i1; i++) {
      const x = L.t0 + (i + 0.5) * L.b;
      if (Number.isNaN(L.mean[i])) rows.push([x, null]);
      else rows.push([x, [L.min[i] / 1e3, L.mean[i] / 1e3, L.max[i] / 1e3]]);
    }
  }

  /*
   * The power chart's rows (x in s, [min, mean, max] in mW) for the visible
   * range @range ([lo, hi] s, or null for the whole capture): the coarsest
   * level everywhere, finer data in and around the visible range.
   */
  function powerRows(range) {
    const rows = [[0, null]];
    let src = { kind: 'none', bucket_ns: null, points: 0 };
    if (!coarse && !raw.length) { rows.push([DUR, null]); return { rows, src }; }
    if (!range) {
      if (coarse) {
        pushLevel(rows, coarse, 0, coarse.n);
        src = { kind: 'level', bucket_ns: coarse.bucket_ns, points: coarse.n };
      } else {
        for (const r of raw) for (let i = 0; i < r.n; i++) rows.push([r.t[i], [r.p[i] / 1e3, r.p[i] / 1e3, r.p[i] / 1e3]]);
        src = { kind: 'raw', bucket_ns: null, points: rows.length - 1 };
      }
      rows.push([DUR, null]);
      return { rows, src };
    }
    const [lo, hi] = range, pad = (hi - lo) / 2, wlo = lo - pad, whi = hi + pad;
    let fine = null;
    for (const L of levels)
      if (L.bucket_ns >= 2 * SAMPLE_NS && centreIdx(L, whi) - centreIdx(L, wlo) <= MAX_BUCKETS) { fine = L; break; }
    if (!fine) fine = coarse;
    const runs = []; let nraw = 0, visibleRaw = 0;
    for (const r of raw) {
      if (r.t[r.n - 1] < wlo || r.t[0] > whi) continue;
      const a = lowerBound(r.t, wlo), b = lowerBound(r.t, whi);
      if (b > a) { runs.push({ r, a, b }); nraw += b - a; }
      visibleRaw += lowerBound(r.t, hi) - lowerBound(r.t, lo);
    }
    const useRaw = runs.length > 0 && nraw <= MAX_RAW;
    if (coarse) pushLevel(rows, coarse, 0, centreIdx(coarse, wlo));
    let cursor = wlo;
    if (useRaw) {
      for (const { r, a, b } of runs) {
        const from = Math.max(a, lowerBound(r.t, cursor));
        if (from >= b) continue;
        if (fine) pushLevel(rows, fine, centreIdx(fine, cursor), centreIdx(fine, r.t[from]));
        for (let i = from; i < b; i++) {
          if (i > from && (r.t[i] - r.t[i - 1] > r.gap || inGap(r.t[i - 1], r.t[i])))
            rows.push([(r.t[i] + r.t[i - 1]) / 2, null]);
          const p = r.p[i] / 1e3;
          rows.push([r.t[i], [p, p, p]]);
        }
        cursor = r.t[b - 1] + 1e-12;
      }
    }
    if (fine) pushLevel(rows, fine, centreIdx(fine, cursor), centreIdx(fine, whi));
    if (coarse) pushLevel(rows, coarse, centreIdx(coarse, whi), coarse.n);
    rows.push([DUR, null]);
    if (useRaw && visibleRaw > 0) src = { kind: 'raw', bucket_ns: null, points: visibleRaw };
    else if (fine) src = { kind: 'level', bucket_ns: fine.bucket_ns, points: centreIdx(fine, hi) - centreIdx(fine, lo) };
    return { rows, src };
  }
  function inGap(a, b) {
    for (const [ga, gb] of gaps) if (ga < b && gb > a) return true;
    return false;
  }

  /* ---- the timeline's rows ------------------------------------------------ */

  const blockerColor = new Map();
  report.blockers.forEach((b, i) => blockerColor.set(b.name, COLORS[i % COLORS.length]));
  const timelineRows = [];
  timelineRows.push({ name: 'suspended', cls: 'state', color: '#6baed6', spans: suspended });
  {
    // a kernel wakeup source and a blocker may share a name: keyed by both
    const key = (kind, name) => (kind === 'wakeup_source' ? 'ws:' : 'sb:') + name;
    const byName = new Map(report.trace.timeline.map((t) => [key(t.kind, t.name), t]));
    const names = report.blockers.map((b) => key(b.kind, b.name)).filter((n) => byName.has(n));
    for (const t of report.trace.timeline) if (!names.includes(key(t.kind, t.name))) names.push(key(t.kind, t.name));
    names.forEach((k, i) => {
      const t = byName.get(k), ws = t.kind === 'wakeup_source';
      if (!blockerColor.has(t.name)) blockerColor.set(t.name, COLORS[(report.blockers.length + i) % COLORS.length]);
      const spans = t.spans.map(([a, b]) => [toS(a), toS(b)]).sort((a, b) => a[0] - b[0]);
      // wakeup sources: outlined, striped bars and a row label of their own class
      timelineRows.push({ name: t.name, cls: ws ? 'ws' : 'blocker', color: blockerColor.get(t.name), spans });
    });
  }
  timelineRows.push({
    name: 'wakeups', cls: 'wakeups', color: '#e6550d',
    spans: report.wakeups.filter((w) => w.t_ns !== null && w.t_ns !== undefined)
      .map((w) => [toS(w.t_ns), toS(w.resume_t_ns)]).sort((a, b) => a[0] - b[0]),
  });
  // rows top to bottom; row r is drawn at y = nrows - 1 - r
  const yOfRow = (r) => timelineRows.length - 1 - r;

  // the rows' spans that touch [lo, hi]: spans of a row do not overlap
  function visibleSpans(spans, lo, hi, fn) {
    for (let i = lowerBound(spans, lo, (s) => s[1]); i < spans.length && spans[i][0] <= hi; i++) fn(spans[i]);
  }
  // a kernel wakeup source's bars: diagonal stripes of its colour
  const wsPatterns = new Map();
  function wsPattern(ctx, color) {
    if (wsPatterns.has(color)) return wsPatterns.get(color);
    const c = document.createElement('canvas');
    c.width = c.height = 6;
    const x = c.getContext('2d');
    x.strokeStyle = color; x.lineWidth = 2;
    x.beginPath(); x.moveTo(0, 6); x.lineTo(6, 0); x.stroke();
    const p = ctx.createPattern(c, 'repeat');
    wsPatterns.set(color, p);
    return p;
  }
  function timelinePlotter(e) {
    const g = e.dygraph, ctx = e.drawingContext, area = e.plotArea;
    const [lo, hi] = g.xAxisRange();
    ctx.save();
    ctx.beginPath(); ctx.rect(area.x, area.y, area.w, area.h); ctx.clip();
    timelineRows.forEach((row, r) => {
      const yc = g.toDomYCoord(yOfRow(r)), h = ROW_PX * 0.62;
      if (r % 2) { ctx.fillStyle = 'rgba(0,0,0,0.035)'; ctx.fillRect(area.x, yc - ROW_PX / 2, area.w, ROW_PX); }
      const ws = row.cls === 'ws';
      ctx.fillStyle = ws ? wsPattern(ctx, row.color) : row.color;
      ctx.strokeStyle = row.color;
      visibleSpans(row.spans, lo, hi, ([a, b]) => {
        const x1 = g.toDomXCoord(Math.max(a, lo)), x2 = g.toDomXCoord(Math.min(b, hi));
        ctx.fillRect(x1, yc - h / 2, Math.max(1, x2 - x1), h);
        if (ws) ctx.strokeRect(x1 + 0.5, yc - h / 2 + 0.5, Math.max(1, x2 - x1 - 1), h - 1);
      });
    });
    ctx.restore();
  }
  // suspended stretches and gaps behind the data of both charts
  function underlay(ctx, area, g) {
    const [lo, hi] = g.xAxisRange();
    ctx.fillStyle = 'rgba(107,174,214,0.16)';
    visibleSpans(suspended, lo, hi, ([a, b]) => {
      const x1 = g.toDomXCoord(Math.max(a, lo)), x2 = g.toDomXCoord(Math.min(b, hi));
      ctx.fillRect(x1, area.y, Math.max(1, x2 - x1), area.h);
    });
    ctx.fillStyle = 'rgba(214,39,40,0.18)';
    for (const [a, b] of gaps) {
      if (b < lo || a > hi) continue;
      const x1 = g.toDomXCoord(Math.max(a, lo)), x2 = g.toDomXCoord(Math.min(b, hi));
      ctx.fillRect(x1, area.y, Math.max(2, x2 - x1), area.h);
    }
  }
  function xLabel(x, gran, opts, g) {
    const r = g ? g.xAxisRange() : [0, DUR];
    return fmtSeconds(x, r[1] - r[0]);
  }

  /*
   * Drag zooms x only: the mouse's vertical movement is taken out before
   * dygraphs sees it (the timeline's rows, the power's y axis stay put).
   * Shift- or alt-drag pans; double-click shows the whole capture.
   */
  function xOnlyInteraction() {
    return {
      mousedown(event, g, ctx) {
        if (event.button === 2) return;
        ctx.initializeMouseDown(event, g, ctx);
        const y0 = event.pageY;
        const flat = (ev) => ({ pageX: ev.pageX, pageY: y0, shiftKey: ev.shiftKey, altKey: ev.altKey,
          button: ev.button, target: ev.target, preventDefault() { ev.preventDefault(); },
          stopPropagation() { ev.stopPropagation(); } });
        if (event.altKey || event.shiftKey) Dygraph.startPan(event, g, ctx);
        else Dygraph.startZoom(event, g, ctx);
        const move = (ev) => {
          if (ctx.isZooming) Dygraph.moveZoom(flat(ev), g, ctx);
          else if (ctx.isPanning) Dygraph.movePan(flat(ev), g, ctx);
        };
        const up = (ev) => {
          if (ctx.isZooming) {
            if (ctx.dragEndX !== null) Dygraph.endZoom(flat(ev), g, ctx);
            else { g.clearZoomRect_(); ctx.isZooming = false; }
          } else if (ctx.isPanning) Dygraph.endPan(flat(ev), g, ctx);
          document.removeEventListener('mousemove', move);
          document.removeEventListener('mouseup', up);
          ctx.destroy();
        };
        g.addAndTrackEvent(document, 'mousemove', move);
        g.addAndTrackEvent(document, 'mouseup', up);
      },
      willDestroyContextMyself: true,
      dblclick(event, g, ctx) {
        if (ctx.cancelNextDblclick) { ctx.cancelNextDblclick = false; return; }
        resetZoom();
      },
    };
  }

  /* ---- the state every chart shares ------------------------------------------ */

  const state = { power: null, timeline: null, histogram: null, phases: null,
    range: null, source: { kind: 'none', bucket_ns: null, points: 0 }, curRows: [], syncing: false };

  // Show @range ([lo, hi] s, or null: everything) on both charts.
  function setRange(range) {
    if (range) {
      let [lo, hi] = range;
      if (hi < lo) [lo, hi] = [hi, lo];
      if (hi - lo < 1e-6) { const m = (lo + hi) / 2; lo = m - 5e-7; hi = m + 5e-7; }
      range = [lo, hi];
      if (lo <= 0 && hi >= DUR) range = null;
    }
    state.range = range;
    state.syncing = true;
    try {
      if (state.power) {
        const { rows, src } = powerRows(range);
        state.curRows = rows; state.source = src;
        state.power.updateOptions({ file: rows, dateWindow: range });
      }
      if (state.timeline) state.timeline.updateOptions({ dateWindow: range });
    } finally {
      state.syncing = false;
    }
    updateSourceLabel();
    window.dispatchEvent(new CustomEvent('sbrig-range', { detail: { range: currentRange(), source: state.source } }));
  }
  function resetZoom() { setRange(null); }
  function currentRange() {
    const g = state.power || state.timeline;
    return g ? g.xAxisRange().slice() : [0, DUR];
  }
  // a chart's range changed by the user (zoom, pan, reset): follow it
  function onDraw(g) {
    if (state.syncing) return;
    const r = g.xAxisRange(), zoomed = g.isZoomed('x');
    const cur = state.range;
    if (!zoomed && !cur) return;
    if (zoomed && cur && Math.abs(r[0] - cur[0]) < 1e-12 && Math.abs(r[1] - cur[1]) < 1e-12) return;
    // dygraphs is in the middle of drawing @g: redraw once it is done
    Promise.resolve().then(() => setRange(zoomed ? r : null));
  }
  function updateSourceLabel() {
    const e = document.getElementById('trace-source');
    if (!e) return;
    const s = state.source;
    e.textContent = s.kind === 'raw' ? 'showing raw samples (' + fmtCount(s.points) + ' in view)'
      : s.kind === 'level' ? 'showing min/mean/max per ' + fmtDur(s.bucket_ns) + ' (' + fmtCount(s.points) + ' buckets in view)'
        : 'no samples';
  }

  function activeAt(x) {
    const names = [];
    for (const row of timelineRows) {
      if (row.cls !== 'blocker' && row.cls !== 'ws') continue;
      const i = lowerBound(row.spans, x, (s) => s[1]);
      if (i < row.spans.length && row.spans[i][0] <= x) names.push(row.name);
    }
    return names;
  }
  function isSuspended(x) {
    const i = lowerBound(suspended, x, (s) => s[1]);
    return i < suspended.length && suspended[i][0] <= x;
  }
  function readout(g, ev) {
    const out = document.getElementById('trace-readout');
    if (!out) return;
    const x = g.toDataXCoord(g.eventToDomCoords(ev)[0]);
    if (!(x >= 0 && x <= DUR)) { out.textContent = '\u00a0'; return; }
    const rows = state.curRows; let i = lowerBound(rows, x, (r) => r[0]);
    if (i > 0 && (i >= rows.length || Math.abs(rows[i - 1][0] - x) < Math.abs(rows[i][0] - x))) i--;
    const v = rows[i] && rows[i][1];
    const parts = ['t = ' + fmtSeconds(x, currentRange()[1] - currentRange()[0])];
    if (v) parts.push(v[0] === v[2] ? 'power ' + fmtPower(v[1] * 1e3)
      : 'power ' + fmtPower(v[1] * 1e3) + ' (min ' + fmtPower(v[0] * 1e3) + ', max ' + fmtPower(v[2] * 1e3) + ')');
    parts.push(isSuspended(x) ? 'suspended' : 'awake');
    const act = activeAt(x);
    parts.push(act.length ? 'active: ' + act.join(', ') : 'no blocker active');
    out.textContent = parts.join(' \u00b7 ');
  }

  /* ---- sections ---------------------------------------------------------------- */

  function headline() {
    const e = report.energy, lat = report.latency;
    const card = (label, value, sub, attrs) => el('div', { class: 'card' },
      el('div', { class: 'label' }, label), el('div', Object.assign({ class: 'value' }, attrs || {}), value),
      sub ? el('div', { class: 'sub' }, sub) : null);
    const status = el('span', { class: 'status status-' + (cap.status === 'complete' ? 'ok' : 'bad') }, cap.status);
    return el('header', null,
      el('h1', null, 'sbrig report'),
      el('p', { class: 'subtitle' }, el('span', { class: 'path' }, cap.path), ' \u00b7 ', status,
        ' \u00b7 ', fmtDur(cap.duration_ns), ' \u00b7 ', fmtCount(cap.samples), ' samples'),
      el('div', { class: 'cards' },
        card('total energy', fmtEnergy(e.total_uJ), 'mean ' + fmtPower(cap.duration_ns > 0 ? e.total_uJ / (cap.duration_ns / 1e9) : null),
          { id: 'total-energy', data: { uj: String(e.total_uJ) } }),
        card('awake', fmtEnergy(e.awake_uJ), fmtDur(e.awake_ns) + ' (' + pct(e.awake_ns, e.awake_ns + e.suspended_ns) + ')'),
        card('suspended', fmtEnergy(e.suspended_uJ), fmtDur(e.suspended_ns) + ' (' + pct(e.suspended_ns, e.awake_ns + e.suspended_ns) + ')'),
        card('suspended baseline', fmtPower(e.baseline_uW), 'mean power while suspended'),
        card('unattributed', fmtEnergy(report.unattributed.energy_uJ), fmtDur(report.unattributed.awake_ns) + ' awake, no blocker'),
        card('wakeups', fmtCount(report.wakeups.length),
          lat.n ? 'median latency ' + fmtDur(lat.median_ns) : 'no latency measured')));
  }

  const FINDING_SEVERITY = { leak: 'bad', aborted_suspend: 'bad', unknown_wakeup: 'warn', dominant: 'warn',
    short_suspend: 'warn', gap: 'info', lost_events: 'warn', clock_uncertainty: 'info', stats_mismatch: 'info', skipped_events: 'info' };
  function findings() {
    const list = report.findings;
    if (!list.length) return section('findings', 'Findings', empty('No findings: nothing the analysis checks for went wrong.'));
    return section('findings', 'Findings (' + list.length + ')', el('ol', { class: 'findings' }, list.map((f, i) =>
      el('li', { class: 'finding sev-' + (FINDING_SEVERITY[f.kind] || 'info'), data: { kind: f.kind, rank: String(i + 1) } },
        el('span', { class: 'kind' }, f.kind.replace(/_/g, ' ')),
        f.blocker !== null ? el('span', { class: 'blocker' }, f.blocker) : null,
        el('span', { class: 'detail' }, f.detail),
        f.t_ns !== null ? el('a', { href: '#trace', class: 'at', title: 'show on the trace',
          onclick: (ev) => { ev.preventDefault(); zoomAround(f.t_ns); } }, 'at ' + fmtAt(f.t_ns)) : null))));
  }
  function zoomAround(t_ns, until_ns) {
    const a = toS(t_ns), b = until_ns !== undefined ? toS(until_ns) : a;
    const pad = Math.max(0.5, (b - a) * 0.2);
    setRange([Math.max(0, a - pad), Math.min(DUR, b + pad)]);
    document.getElementById('trace').scrollIntoView({ block: 'start' });
  }

  function trace() {
    const has = coarse || raw.length;
    if (!(DUR > 0))
      return section('trace', 'Power and blockers over time', empty('No samples in this capture: no power trace.'));
    const sec = section('trace', 'Power and blockers over time',
      el('div', { class: 'toolbar' },
        el('span', { class: 'hint' }, 'drag to zoom \u00b7 shift-drag to pan \u00b7 double-click to reset'),
        el('button', { type: 'button', id: 'trace-reset', onclick: resetZoom }, 'whole capture'),
        el('span', { id: 'trace-source', class: 'source' })),
      has ? el('div', { id: 'power-chart', class: 'chart' }) : empty('No samples in this capture: no power trace.'),
      el('div', { id: 'timeline-chart', class: 'chart timeline', style: 'height:' + (timelineRows.length * ROW_PX + 28) + 'px' }),
      el('div', { id: 'trace-readout', class: 'readout' }, '\u00a0'),
      el('p', { class: 'legend' },
        el('span', { class: 'swatch', style: 'background:rgba(107,174,214,0.4)' }), ' suspended ',
        el('span', { class: 'swatch', style: 'background:rgba(214,39,40,0.35)' }), ' gap (samples missing) ',
        el('span', { class: 'swatch', style: 'background:#e6550d' }), ' wakeup: stimulus to resume'));
    return sec;
  }
  function drawTrace() {
    const common = {
      axes: { x: { axisLabelFormatter: xLabel, valueFormatter: (x) => fmtSeconds(x, 1) },
        y: { axisLabelWidth: Y_LABEL_W } },
      underlayCallback: underlay,
      interactionModel: xOnlyInteraction(),
      drawCallback: (g) => onDraw(g),
      legend: 'never',
      xRangePad: 0,
    };
    const pdiv = document.getElementById('power-chart');
    if (pdiv) {
      const { rows, src } = powerRows(null);
      state.curRows = rows; state.source = src;
      state.power = new Dygraph(pdiv, rows, Object.assign({}, common, {
        labels: ['t', 'power'], customBars: true, ylabel: 'power (mW)',
        colors: ['#08519c'], strokeWidth: 1.2, fillAlpha: 0.3, includeZero: true,
        axes: Object.assign({}, common.axes, { y: { axisLabelWidth: Y_LABEL_W, valueFormatter: (v) => fmtPower(v * 1e3) } }),
      }));
      pdiv.addEventListener('mousemove', (ev) => readout(state.power, ev));
    }
    const tdiv = document.getElementById('timeline-chart');
    if (!tdiv) return;
    const n = timelineRows.length;
    state.timeline = new Dygraph(tdiv, [[0, -10], [DUR, -10]], Object.assign({}, common, {
      labels: ['t', 'rows'], valueRange: [-0.5, n - 0.5], plotter: timelinePlotter,
      drawGrid: true, drawYGrid: false, drawAxesAtZero: false,
      axes: Object.assign({}, common.axes, { y: { axisLabelWidth: Y_LABEL_W, drawAxis: true, drawGrid: false,
        ticker: () => timelineRows.map((row, r) => ({ v: yOfRow(r),
          label: '<span class="row-label row-' + row.cls + '" title="' + esc(row.name) + '">' +
            esc(row.name.length > 24 ? row.name.slice(0, 23) + '\u2026' : row.name) + '</span>' })) } }),
    }));
    tdiv.addEventListener('mousemove', (ev) => readout(state.timeline, ev));
    updateSourceLabel();
  }

  function sortable(table, defaultNote) {
    const ths = table.tHead.rows[0].cells;
    let sortCol = -1, asc = true;
    Array.from(ths).forEach((th, c) => {
      th.tabIndex = 0;
      th.title = 'sort by ' + th.textContent;
      const go = () => {
        asc = sortCol === c ? !asc : th.classList.contains('num') ? false : true;
        sortCol = c;
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        rows.sort((a, b) => {
          const x = a.cells[c].dataset.v, y = b.cells[c].dataset.v;
          const nx = Number(x), ny = Number(y);
          const r = (x !== '' && y !== '' && !Number.isNaN(nx) && !Number.isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
          return asc ? r : -r;
        });
        for (const r of rows) body.appendChild(r);
        for (const h of ths) h.removeAttribute('aria-sort');
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      };
      th.addEventListener('click', go);
      th.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
    });
    return table;
  }
  // a cell: shown text, sort value
  function td(text, v, cls) {
    return el('td', { class: cls, data: { v: v === null || v === undefined ? '' : String(v) } }, text);
  }
  function blockers() {
    const bl = report.blockers;
    const attributed = bl.reduce((s, b) => s + b.energy_uJ, 0);
    if (!bl.length)
      return section('blockers', 'Energy per blocker', empty('No blocker was active in this capture.'), totalsTable());
    const head = ['blocker', 'kind', 'energy', 'share', 'exclusive', 'above baseline', 'activations', 'active time', 'longest', 'stats check'];
    const numeric = [false, false, true, true, true, true, true, true, true, false];
    const table = el('table', { class: 'data', id: 'blocker-table' },
      el('thead', null, el('tr', null, head.map((h, i) => el('th', { class: numeric[i] ? 'num' : null, scope: 'col' }, h)))),
      el('tbody', null, bl.map((b) => {
        const sc = b.stats_check;
        const check = !sc ? td('\u2013', '') : sc.agree ? td('agrees', 'agrees', 'ok')
          : td('disagrees', 'disagrees', 'bad');
        if (sc) check.title = 'module: count ' + sc.count_delta + ', ' + fmtDur(sc.total_time_delta_ns) +
          '; events: count ' + sc.events_count + ', ' + fmtDur(sc.events_active_ns);
        return el('tr', { data: { blocker: b.name } },
          el('td', { data: { v: b.name }, class: 'name' }, el('span', { class: 'swatch', style: 'background:' + blockerColor.get(b.name) }),
            b.name, b.active_at_end ? el('span', { class: 'tag', title: 'still active at the end of the capture' }, 'active at end') : null),
          td(b.kind, b.kind),
          td(fmtEnergy(b.energy_uJ), b.energy_uJ, 'num'),
          td(pct(b.energy_uJ, attributed), attributed > 0 ? b.energy_uJ / attributed : 0, 'num'),
          td(fmtEnergy(b.exclusive_energy_uJ), b.exclusive_energy_uJ, 'num'),
          td(fmtEnergy(b.above_baseline_uJ), b.above_baseline_uJ, 'num'),
          td(fmtCount(b.activations), b.activations, 'num'),
          td(fmtDur(b.active_ns), b.active_ns, 'num'),
          td(fmtDur(b.max_active_ns), b.max_active_ns, 'num'),
          check);
      })));
    return section('blockers', 'Energy per blocker',
      el('p', { class: 'note' }, 'Awake energy is split equally among the blockers active at each instant; ' +
        '\u201cexclusive\u201d is the energy of stretches where the blocker was the only one active, ' +
        '\u201cabove baseline\u201d the same split of the energy above the suspended baseline power. ' +
        'Click a column to sort.'),
      el('div', { class: 'scroll' }, sortable(table)), totalsTable());
  }
  function totalsTable() {
    const e = report.energy, u = report.unattributed;
    const attributed = report.blockers.reduce((s, b) => s + b.energy_uJ, 0);
    const row = (label, uJ, ns, note) => el('tr', null, el('th', { scope: 'row' }, label),
      el('td', { class: 'num' }, fmtEnergy(uJ)), el('td', { class: 'num' }, pct(uJ, e.total_uJ)),
      el('td', { class: 'num' }, ns === null ? '' : fmtDur(ns)), el('td', { class: 'note' }, note || ''));
    return el('table', { class: 'data totals', id: 'energy-totals' },
      el('thead', null, el('tr', null, el('th', null, ''), el('th', { class: 'num' }, 'energy'),
        el('th', { class: 'num' }, 'of total'), el('th', { class: 'num' }, 'time'), el('th', null, ''))),
      el('tbody', null,
        row('blockers', attributed, null, report.blockers.length + ' blockers'),
        row('unattributed', u.energy_uJ, u.awake_ns, 'awake with no blocker active'),
        row('suspended', e.suspended_uJ, e.suspended_ns, 'baseline ' + fmtPower(e.baseline_uW)),
        row('total', e.total_uJ, e.awake_ns + e.suspended_ns, 'gaps excluded')));
  }

  // what woke the target: the rig's stimulus, else a kernel wakeup source
  function wokenBy(x) {
    if (x.stimulus !== null && x.stimulus !== undefined) return x.stimulus;
    return x.cause === 'wakeup_source' ? 'wakeup source ' + x.wakeup_source : 'unknown';
  }
  const at = (x) => (x.t_ns !== null && x.t_ns !== undefined ? x.t_ns : x.resume_t_ns);
  // a resume known only as a lower bound (report-format.md, resume_from): \u2265
  const atText = (x) => ((x.t_ns === null || x.t_ns === undefined) && x.resume_from === 'bounded' ? '\u2265 ' : '') + fmtAt(at(x));
  function latencyTo(x) {
    if (x.latency_ns === null || x.latency_ns === undefined) return '\u2013';
    return x.latency_from === 'marker' ? 'marker edge' : 'resume';
  }
  function wakeups() {
    const w = report.wakeups, lat = report.latency;
    const kids = [];
    kids.push(el('p', { class: 'latency', id: 'latency-summary' }, lat.n
      ? ['latency over ', String(lat.n), ' wakeups: min ', fmtDur(lat.min_ns), ' \u00b7 median ', fmtDur(lat.median_ns),
        ' \u00b7 p95 ', fmtDur(lat.p95_ns), ' \u00b7 max ', fmtDur(lat.max_ns)]
      : 'No wakeup latency measured.',
    report.unknown_wake_count ? ' \u00b7 ' + report.unknown_wake_count + ' unknown wakeups (no stimulus, no wakeup source)' : ''));
    if (!w.length) {
      kids.push(empty('No wakeups in this capture (no press or plug woke the target).'));
      return section('wakeups', 'Wakeups', ...kids);
    }
    kids.push(el('div', { id: 'latency-histogram', class: 'chart small' }));
    const table = el('table', { class: 'data', id: 'wakeup-table' },
      el('thead', null, el('tr', null, ['#', 'woken by', 'at', 'latency', '\u00b1', 'to', 'awake', 'energy', 'blockers'].map((h, i) =>
        el('th', { class: [0, 2, 3, 4, 6, 7].includes(i) ? 'num' : null, scope: 'col' }, h)))),
      el('tbody', null, w.map((x, i) => el('tr', { class: 'clickable', title: 'show on the trace',
        onclick: () => zoomAround(at(x), x.resume_t_ns + Math.min(x.awake_ns, 2e9)) },
      td(String(i + 1), i + 1, 'num'), td(wokenBy(x), wokenBy(x)), td(atText(x), at(x), 'num'),
      td(fmtDur(x.latency_ns), x.latency_ns, 'num'), td(fmtDur(x.uncert_ns), x.uncert_ns, 'num'),
      td(latencyTo(x), latencyTo(x)),
      td(fmtDur(x.awake_ns), x.awake_ns, 'num'), td(fmtEnergy(x.energy_uJ), x.energy_uJ, 'num'),
      td(x.blockers.join(', '), x.blockers.join(', '))))));
    kids.push(el('div', { class: 'scroll' }, sortable(table)));
    return section('wakeups', 'Wakeups', ...kids);
  }
  function drawHistogram() {
    const div = document.getElementById('latency-histogram');
    if (!div) return;
    const v = report.wakeups.filter((w) => w.latency_ns !== null && w.latency_ns !== undefined)
      .map((w) => w.latency_ns / 1e6);
    if (!v.length) return;
    let lo = Math.min(...v), hi = Math.max(...v);
    const nb = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(v.length) * 2)));
    if (hi - lo < 1e-3) { lo -= 0.5; hi += 0.5; }
    const step = (hi - lo) / nb, counts = new Array(nb).fill(0);
    for (const x of v) counts[Math.min(nb - 1, Math.floor((x - lo) / step))]++;
    const rows = counts.map((c, i) => [lo + i * step, c]);
    rows.push([hi, counts[nb - 1]], [hi, 0]);
    state.histogram = new Dygraph(div, rows, {
      labels: ['latency (ms)', 'wakeups'], stepPlot: true, fillGraph: true, fillAlpha: 0.45,
      colors: ['#e6550d'], includeZero: true, xlabel: 'latency from stimulus to resume, or to the marker edge (ms)', ylabel: 'wakeups',
      axes: { y: { axisLabelWidth: 40 }, x: { axisLabelFormatter: (x) => num(x, 3) } },
      legend: 'follow', xRangePad: 4,
    });
  }

  // what each suspend cost: entry and exit above the baseline, break-even
  function costs() {
    const co = report.suspend_costs;
    if (!co || !co.cycles.length) return [];
    const en = (x) => (x === null || x === undefined ? '\u2013' : fmtEnergy(x));
    const table = el('table', { class: 'data', id: 'cost-table' },
      el('thead', null, el('tr', null, ['#', 'at', 'suspended', 'entry', 'entry energy', 'exit', 'exit energy', 'break-even'].map((h) =>
        el('th', { class: 'num', scope: 'col' }, h)))),
      el('tbody', null, co.cycles.map((c, i) => el('tr', { class: c.break_even_ns !== null && c.suspended_ns < c.break_even_ns ? 'short' : null },
        td(String(i + 1), i + 1, 'num'), td(fmtAt(c.t_ns), c.t_ns, 'num'), td(fmtDur(c.suspended_ns), c.suspended_ns, 'num'),
        td(fmtDur(c.entry_ns), c.entry_ns, 'num'), td(en(c.entry_uJ), c.entry_uJ, 'num'),
        td(fmtDur(c.exit_ns), c.exit_ns, 'num'), td(en(c.exit_uJ), c.exit_uJ, 'num'),
        td(fmtDur(c.break_even_ns), c.break_even_ns, 'num')))));
    return [el('h3', null, 'What each suspend costs'),
      el('p', { class: 'note', id: 'break-even' }, 'Energy above the suspended baseline going down (from the last release) and coming back ' +
        '(to the first blocker); a suspend shorter than its break-even cost more than staying awake idle (' +
        fmtPower(co.idle_uW) + '). Median break-even: ' + fmtDur(co.median_break_even_ns) + '.'),
      el('div', { class: 'scroll' }, sortable(table))];
  }
  // a phase's duration; its slowest device callbacks, if any, as its title
  function phaseCell(p) {
    const cell = td(fmtDur(p.duration_ns), p.duration_ns, 'num');
    const dv = p.slowest_devices || [];
    if (dv.length)
      cell.title = 'slowest: ' + dv.map((d) => d.device + ' ' + d.verb + ' ' + fmtDur(d.duration_ns)).join(', ');
    return cell;
  }
  function phases() {
    const cycles = report.phases;
    if (!cycles.length)
      return section('phases', 'Suspend and resume phases',
        empty('No phases in this capture: the event log did not record the kernel\u2019s suspend/resume phases.'), ...costs());
    const names = [];
    for (const c of cycles) for (const p of c.phases) if (!names.includes(p.name)) names.push(p.name);
    const table = el('table', { class: 'data', id: 'phase-table' },
      el('thead', null, el('tr', null, el('th', { class: 'num', scope: 'col' }, 'cycle'),
        el('th', { class: 'num', scope: 'col' }, 'at'),
        names.map((n) => el('th', { class: 'num', scope: 'col' }, n)), el('th', { class: 'num', scope: 'col' }, 'total'))),
      el('tbody', null, cycles.map((c) => {
        const by = new Map(c.phases.map((p) => [p.name, p]));
        const total = c.phases.reduce((s, p) => s + p.duration_ns, 0);
        const at = c.phases.length ? c.phases[0].t_ns : null;
        return el('tr', null, td(String(c.cycle), c.cycle, 'num'), td(fmtAt(at), at, 'num'),
          names.map((n) => by.has(n) ? phaseCell(by.get(n)) : td('\u2013', '', 'num')),
          td(fmtDur(total), total, 'num'));
      })));
    return section('phases', 'Suspend and resume phases',
      el('div', { id: 'phase-chart', class: 'chart small' }), el('div', { class: 'scroll' }, sortable(table)),
      ...devices(cycles), ...costs());
  }
  // the slowest device callbacks of each device pass (the log's dev_pm records)
  function devices(cycles) {
    const rows = [];
    for (const c of cycles) for (const p of c.phases) for (const d of (p.slowest_devices || []))
      rows.push({ cycle: c.cycle, phase: p.name, ...d });
    if (!rows.length) return [];
    const table = el('table', { class: 'data', id: 'devpm-table' },
      el('thead', null, el('tr', null, ['cycle', 'phase', 'device', 'callback', 'duration', 'error'].map((h) =>
        el('th', { class: h === 'cycle' || h === 'duration' || h === 'error' ? 'num' : null, scope: 'col' }, h)))),
      el('tbody', null, rows.map((r) => el('tr', null, td(String(r.cycle), r.cycle, 'num'), td(r.phase, r.phase),
        td(r.device, r.device), td(r.verb, r.verb), td(fmtDur(r.duration_ns), r.duration_ns, 'num'),
        td(String(r.error), r.error, 'num')))));
    return [el('h3', null, 'Slowest device callbacks'),
      el('p', { class: 'note' }, 'Per device pass, its slowest device PM callbacks (at most 3) that took at least ' +
        'the module\u2019s event_dev_pm_min_us; an error other than 0 is the callback\u2019s return value.'),
      el('div', { class: 'scroll' }, sortable(table))];
  }
  function drawPhases() {
    const div = document.getElementById('phase-chart');
    if (!div) return;
    const names = [];
    for (const c of report.phases) for (const p of c.phases) if (!names.includes(p.name)) names.push(p.name);
    const rows = report.phases.map((c) => {
      const by = new Map(c.phases.map((p) => [p.name, p.duration_ns / 1e6]));
      return [c.cycle, ...names.map((n) => (by.has(n) ? by.get(n) : null))];
    }).sort((a, b) => a[0] - b[0]);
    state.phases = new Dygraph(div, rows, {
      labels: ['cycle', ...names], drawPoints: true, pointSize: 3, strokeWidth: 1,
      xlabel: 'suspend/resume cycle', ylabel: 'duration (ms)', includeZero: true, legend: 'follow',
      connectSeparatedPoints: true, xRangePad: 8, colors: names.map((n, i) => COLORS[i % COLORS.length]),
      axes: { x: { axisLabelFormatter: (x) => (Number.isInteger(x) ? String(x) : '') }, y: { axisLabelWidth: 50 } },
    });
  }

  function details() {
    const kv = (rows) => el('table', { class: 'kv' }, el('tbody', null, rows.filter((r) => r).map(([k, v]) =>
      el('tr', null, el('th', { scope: 'row' }, k), el('td', null, v === undefined || v === null ? '\u2013' : String(v))))));
    const c = cap;
    const skipped = c.skipped_events ? Object.entries(c.skipped_events).map(([k, v]) => k + ': ' + v).join(', ') : null;
    const kids = [kv([
      ['path', c.path], ['status', c.status], c.format_version !== undefined ? ['format version', c.format_version] : null,
      ['start', c.start_ns + ' ns (host CLOCK_MONOTONIC)'], ['end', c.end_ns + ' ns'], ['duration', fmtDur(c.duration_ns)],
      ['samples', fmtCount(c.samples)], ['gaps', fmtCount(c.gaps)], ['missing samples', fmtCount(c.missing_samples)],
      c.events !== undefined ? ['events', fmtCount(c.events)] : null,
      c.unmapped_events !== undefined ? ['unmapped events', fmtCount(c.unmapped_events)] : null,
      // how the capture ended (report-format.md, "The capture's end")
      c.end ? ['ended', {
        suspended: 'asleep (the log\'s last platform record: enter)',
        inferred_suspended: 'asleep from ' + fmtAt(c.end.inferred_t_ns) + ', inferred by the power: the last suspend\'s records never came',
        awake: 'awake (by the power after the target\'s last word)',
        unknown: 'awake by the log; the power cannot tell (its last records may be missing)',
      }[c.end.state] || c.end.state] : null,
      c.object_ids ? ['blocker object ids', {
        all: 'in every block/unblock record: objects of one name told apart',
        some: 'in some block/unblock records: the others counted per name',
        none: 'none: objects of one name counted, not told apart (approximate after lost records)',
      }[c.object_ids] || c.object_ids] : null,
      skipped ? ['skipped events', skipped] : null,
      c.clock ? ['clock model', (c.clock.segments !== undefined ? c.clock.segments + ' segments' : '') +
        (c.clock.max_uncert_ns !== undefined && c.clock.max_uncert_ns !== null ? ', largest uncertainty ' + fmtDur(c.clock.max_uncert_ns) : '')] : null,
      report.generator ? ['analysed by', report.generator] : null,
      ['rendered by', (document.querySelector('meta[name=generator]') || {}).content],
    ])];
    if (report.gaps.length) {
      kids.push(el('h3', null, 'Gaps'), el('table', { class: 'data', id: 'gap-table' },
        el('thead', null, el('tr', null, ['at', 'duration', 'missing samples', 'declared', 'hidden energy'].map((h) =>
          el('th', { class: h === 'declared' ? null : 'num' }, h)))),
        el('tbody', null, report.gaps.map((g) => el('tr', null, el('td', { class: 'num' }, fmtAt(g.t_ns)),
          el('td', { class: 'num' }, fmtDur(g.duration_ns)), el('td', { class: 'num' }, fmtCount(g.missing)),
          el('td', null, g.at_stop ? 'lost at the stop (meta.ini)' : g.declared ? 'in gaps.tsv' : 'undeclared'),
          el('td', { class: 'num' }, fmtEnergy(g.hidden_min_uJ) + ' \u2013 ' + fmtEnergy(g.hidden_max_uJ)))))));
    }
    if (c.provenance && Object.keys(c.provenance).length) kids.push(el('h3', null, 'Provenance'), kv(Object.entries(c.provenance)));
    if (c.targets && c.targets.length) {
      const keys = [];
      for (const t of c.targets) for (const k of Object.keys(t)) if (!keys.includes(k)) keys.push(k);
      kids.push(el('h3', null, 'Targets'), el('table', { class: 'data' },
        el('thead', null, el('tr', null, keys.map((k) => el('th', null, k.replace(/_/g, ' '))))),
        el('tbody', null, c.targets.map((t) => el('tr', null, keys.map((k) => el('td', null, t[k] === undefined || t[k] === null ? '\u2013' : String(t[k]))))))));
    }
    return section('capture', 'Capture and provenance', ...kids);
  }

  /* ---- putting it together -------------------------------------------------- */

  const main = document.getElementById('report');
  main.append(headline(), findings(), trace(), blockers(), wakeups(), phases(), details());
  drawTrace();
  drawHistogram();
  drawPhases();

  window.sbrig = {
    report,
    get power() { return state.power; },
    get timeline() { return state.timeline; },
    get histogram() { return state.histogram; },
    get phases() { return state.phases; },
    range: currentRange,
    zoom: (lo, hi) => setRange([lo, hi]),
    zoomNs: (a, b) => setRange([toS(a), toS(b)]),
    reset: resetZoom,
    source: () => Object.assign({}, state.source),
    // the trace as the page decoded it: levels finest first, raw by time
    // (t: s from the start; min/max/mean, p: uW)
    trace: { levels, raw },
    ready: true,
  };
  window.dispatchEvent(new CustomEvent('sbrig-ready'));
}());
