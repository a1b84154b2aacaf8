// SPDX-License-Identifier: GPL-2.0
/*
 * compare.js - the comparison page (sbrig compare --html): the verdict,
 * the power and blocker timelines of a representative base run and new
 * run, and per metric its verdict with the distributions of the base and
 * new runs' values. Drawn from the page's data alone (<script
 * id="sbrig-compare">: {compare: compare.json, base_run, new_run: the
 * coarsest power envelope, blocker timeline and states of each
 * representative run's report.json}).
 *
 *   sbrig.ready   true once everything is drawn ('sbrig-ready' event)
 *   sbrig.charts  the power Dygraphs: base, new
 */
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('sbrig-compare').textContent);
  var cmp = data.compare;
  var main = document.getElementById('compare');
  window.sbrig = { ready: false, charts: [], data: data };
  var COLOURS = { base: '#7a8793', 'new': '#4a6fa5' };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(v) {
    if (v === null || v === undefined) return '-';
    var a = Math.abs(v);
    if (a >= 1e5) return Math.round(v).toString();
    return a < 1e-2 && a > 0 ? v.toPrecision(3) : (+v.toPrecision(5)).toString();
  }
  function pct(v) { return v === null || v === undefined ? '' : (v >= 0 ? '+' : '') + (100 * v).toFixed(2) + ' %'; }
  function canvas(cls, h) {
    var c = el('canvas', { 'class': cls });
    c.style.height = h + 'px';
    return c;
  }
  function sized(c) {
    var r = window.devicePixelRatio || 1, w = c.clientWidth || 600, h = c.clientHeight;
    c.width = w * r; c.height = h * r;
    var ctx = c.getContext('2d');
    ctx.scale(r, r);
    return { ctx: ctx, w: w, h: h };
  }

  // ---- header ----
  main.appendChild(el('h1', {}, 'Comparison: ' + (cmp.provenance.scenario || '(no scenario)')));
  var sub = el('p', { 'class': 'subtitle' });
  sub.appendChild(el('span', { 'class': 'verdict v-' + cmp.verdict, id: 'verdict' }, cmp.verdict));
  sub.appendChild(document.createTextNode(
    ' \u00b7 base ' + cmp.base.n + ' runs (' + cmp.base.git_sha.join(', ') + ') vs new ' +
    cmp['new'].n + ' runs (' + cmp['new'].git_sha.join(', ') + ') \u00b7 rig ' +
    (cmp.provenance.rig_name || '?') + ' \u00b7 ' + cmp.generator));
  main.appendChild(sub);
  cmp.warnings.forEach(function (w) { main.appendChild(el('p', { 'class': 'muted' }, 'warning: ' + w)); });

  // ---- timelines of the representative runs ----
  var sec = el('section', { id: 'timelines' });
  sec.appendChild(el('h2', {}, 'A representative run of each side'));
  main.appendChild(sec);
  // one time axis for both runs: from the start to the later end
  var XMAX = 1e-9;
  ['base', 'new'].forEach(function (side) {
    var r = data[side + '_run'], lv = r.level;
    if (lv && lv.mean.length)
      XMAX = Math.max(XMAX, (lv.t0_ns + lv.mean.length * lv.bucket_ns - r.start_ns) / 1e9);
  });
  ['base', 'new'].forEach(function (side) {
    var run = data[side + '_run'];
    var box = el('div', { 'class': 'run', id: 'run-' + side, 'data-side': side });
    box.appendChild(el('h3', { 'class': 'legend-' + side }, side + ': ' + run.input));
    var lv = run.level, t0 = run.start_ns, rows = [];
    if (lv) {
      for (var i = 0; i < lv.mean.length; i++) {
        var x = (lv.t0_ns + i * lv.bucket_ns - t0) / 1e9;
        rows.push([x, lv.mean[i] === null ? null : [lv.min[i], lv.mean[i], lv.max[i]]]);
      }
    }
    var pw = el('div', { 'class': 'power' });
    box.appendChild(pw);
    var names = run.timeline.map(function (b) { return b.name; });
    var tl = canvas('timeline', 18 * names.length + 24);
    box.appendChild(tl);
    sec.appendChild(box);
    var g = null;
    if (rows.length) {
      g = new Dygraph(pw, rows, { labels: ['s', 'power'], customBars: true,
        dateWindow: [0, XMAX],
        colors: [COLOURS[side]], ylabel: '\u00b5W', xlabel: 's from the start',
        labelsKMB: true, legend: 'follow' });
      sbrig.charts.push(g);
    } else {
      pw.appendChild(el('p', { 'class': 'muted' }, 'no power trace'));
    }
    // the blockers under the power, on the chart's own x axis
    box._draw = function () {
      var s = sized(tl), area = g ? g.getArea() : { x: 100, w: s.w - 110 };
      var left = area.x, w = area.w, xmax = XMAX;
      s.ctx.font = '12px sans-serif';
      run.timeline.forEach(function (b, k) {
        var y = 4 + 18 * k;
        s.ctx.fillStyle = '#1b1f24';
        s.ctx.fillText(b.name.length > 14 ? b.name.slice(0, 13) + '\u2026' : b.name, 2, y + 12);
        s.ctx.fillStyle = COLOURS[side];
        b.spans.forEach(function (sp) {
          var a = (sp[0] - t0) / 1e9, e = (sp[1] - t0) / 1e9;
          s.ctx.fillRect(left + w * a / xmax, y + 2, Math.max(1, w * (e - a) / xmax), 12);
        });
      });
    };
  });

  // ---- metrics with their distributions ----
  var ms = el('section', { id: 'metrics' });
  ms.appendChild(el('h2', {}, 'Metrics'));
  var table = el('table', { id: 'metric-table' });
  var head = el('tr');
  ['metric', 'blocker', 'verdict', 'change', 'interval', 'p (adjusted)', 'base (grey) and new (blue) runs'].forEach(
    function (c) { head.appendChild(el('th', {}, c)); });
  table.appendChild(el('thead')).appendChild(head);
  var body = el('tbody');
  var dists = [];
  cmp.metrics.forEach(function (m) {
    var tr = el('tr', { 'data-metric': m.metric, 'data-blocker': m.blocker || '',
                        'data-verdict': m.verdict });
    tr.appendChild(el('td', { 'class': 'mono' }, m.metric));
    tr.appendChild(el('td', {}, m.blocker || ''));
    var v = el('td');
    v.appendChild(el('span', { 'class': 'verdict v-' + m.verdict, title: m.reason }, m.verdict));
    tr.appendChild(v);
    tr.appendChild(el('td', { 'class': 'num' }, m.change === null ? '-' :
      fmt(m.change) + ' ' + m.unit + (m.change_rel === null ? '' : ' (' + pct(m.change_rel) + ')')));
    tr.appendChild(el('td', { 'class': 'num' }, m.ci ? '[' + fmt(m.ci[0]) + ', ' + fmt(m.ci[1]) + ']' : '-'));
    // the p the verdict used: adjusted over the comparison (the raw one in the tooltip)
    tr.appendChild(el('td', { 'class': 'num', title: m.p_value === null ? '' :
                              'raw p ' + m.p_value.toPrecision(3) + ', ' +
                              (m.adjustment || 'not adjusted') + ' over ' + m.family },
                      m.p_adjusted === null ? '-' : m.p_adjusted.toPrecision(3)));
    var td = el('td', { 'class': 'dist-cell' });
    var c = canvas('dist', 34);
    td.appendChild(c);
    tr.appendChild(td);
    body.appendChild(tr);
    dists.push([c, m]);
  });
  table.appendChild(body);
  ms.appendChild(table);
  main.appendChild(ms);

  function drawDist(c, m) {
    var s = sized(c), vals = [];
    ['base', 'new'].forEach(function (side) {
      m[side].values.forEach(function (x) { if (x !== null) vals.push(x); });
    });
    if (!vals.length) return;
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (hi === lo) { lo -= 1; hi += 1; }
    var pad = 6, w = s.w - 2 * pad;
    ['base', 'new'].forEach(function (side, k) {
      var y = 9 + 16 * k;
      s.ctx.fillStyle = COLOURS[side];
      s.ctx.globalAlpha = 0.7;
      m[side].values.forEach(function (x) {
        if (x === null) return;
        s.ctx.beginPath();
        s.ctx.arc(pad + w * (x - lo) / (hi - lo), y, 3, 0, 2 * Math.PI);
        s.ctx.fill();
      });
      s.ctx.globalAlpha = 1;
      if (m[side].median !== null) {
        var xm = pad + w * (m[side].median - lo) / (hi - lo);
        s.ctx.fillRect(xm - 1, y - 7, 2, 14);
      }
    });
  }

  function draw() {
    Array.prototype.forEach.call(document.querySelectorAll('.run'), function (b) { b._draw(); });
    dists.forEach(function (d) { drawDist(d[0], d[1]); });
  }
  draw();
  window.addEventListener('resize', draw);
  sbrig.ready = true;
  window.dispatchEvent(new CustomEvent('sbrig-ready'));
})();
