// SPDX-License-Identifier: GPL-2.0
/*
 * trend.js - the history's trend page: one chart per metric of a
 * scenario over its commits (the median of each commit's runs, min..max
 * as a band), each change point a vertical line with its commit and
 * change, and the commits' table, each run linked to its report. Drawn
 * from the page's data alone (<script id="sbrig-trend">: a trend page
 * document of history-format.md); clicking a point opens that commit's
 * first report.
 *
 *   sbrig.ready   true once everything is drawn ('sbrig-ready' event)
 *   sbrig.charts  the Dygraph of each trend, in order
 */
(function () {
  'use strict';
  var doc = JSON.parse(document.getElementById('sbrig-trend').textContent);
  var main = document.getElementById('trend');
  window.sbrig = { ready: false, charts: [], doc: doc };

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
    return a < 1e-2 && a > 0 ? v.toPrecision(4) : (+v.toPrecision(6)).toString();
  }
  // dygraphs puts what a formatter returns, the labels and the axis titles
  // into the page as HTML (its legend's innerHTML): every string of the
  // data that reaches it goes through esc()
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function pct(v) { return v === null ? '' : ' (' + (v >= 0 ? '+' : '') + (100 * v).toFixed(2) + ' %)'; }
  function href(path) { return 'file://' + path.split('/').map(encodeURIComponent).join('/'); }

  var h = el('h1', {}, 'Trend: ' + doc.scenario);
  main.appendChild(h);
  main.appendChild(el('p', { 'class': 'subtitle' },
    'rig ' + doc.rig + ' \u00b7 ' + doc.trends.length + ' metrics \u00b7 ' +
    doc.commits.length + ' commits \u00b7 sbrig ' + doc.generator));

  doc.trends.forEach(function (t, i) {
    var sec = el('section', { 'class': 'trend', id: 'trend-' + i,
                              'data-metric': t.metric, 'data-blocker': t.blocker || '' });
    sec.appendChild(el('h2', {}, t.metric + (t.blocker ? ' of ' + t.blocker : '') +
                       ' (' + t.unit + ')'));
    var div = el('div', { 'class': 'chart' });
    sec.appendChild(div);
    var ul = el('ul', { 'class': 'steps' });
    if (!t.steps.length) ul.appendChild(el('li', { 'class': 'muted' }, 'no change point'));
    t.steps.forEach(function (s) {
      ul.appendChild(el('li', { 'class': 'step-' + s.direction },
        s.direction + ' at ' + s.commit + ' (after ' + s.after_commit + '): ' +
        (s.change >= 0 ? '+' : '') + fmt(s.change) + ' ' + t.unit + pct(s.change_rel) +
        ', median ' + fmt(s.before) + ' \u2192 ' + fmt(s.after) +
        (s.provisional ? ' (provisional: a window is not full yet)' : '')));
    });
    sec.appendChild(ul);
    main.appendChild(sec);

    var rows = t.points.map(function (p) {
      return [p.seq, [p.values[0], p.median, p.values[p.values.length - 1]]];
    });
    var bySeq = {};
    t.points.forEach(function (p) { bySeq[p.seq] = p; });
    var g = new Dygraph(div, rows, {
      labels: ['commit', esc(t.metric)], customBars: true, drawPoints: true, pointSize: 3,
      colors: ['#4a6fa5'], xlabel: 'commit (sequence)', ylabel: esc(t.unit),
      legend: 'follow', labelsKMB: true,
      axes: { x: { valueFormatter: function (x) {
        var p = bySeq[x];
        return esc(p ? x + ' ' + p.commit + ' (' + p.n + ' runs)' : x); } } },
      underlayCallback: function (ctx, area, gr) {
        t.steps.forEach(function (s) {
          var x = gr.toDomXCoord(s.seq - 0.5);
          ctx.save();
          ctx.strokeStyle = s.direction === 'regressed' ? '#c62828' : '#2e7d32';
          ctx.lineWidth = 2;
          ctx.setLineDash([6, 4]);
          ctx.beginPath();
          ctx.moveTo(x, area.y);
          ctx.lineTo(x, area.y + area.h);
          ctx.stroke();
          ctx.fillStyle = ctx.strokeStyle;
          ctx.fillText(s.commit + pct(s.change_rel), x + 4, area.y + 12);
          ctx.restore();
        });
      },
      pointClickCallback: function (e, pt) {
        var p = bySeq[pt.xval];
        if (p && p.reports.length) window.location.href = href(p.reports[0]);
      }
    });
    sbrig.charts.push(g);
  });

  var sec = el('section', { id: 'commits' });
  sec.appendChild(el('h2', {}, 'Commits'));
  var table = el('table', { id: 'commit-table' });
  var head = el('tr');
  ['seq', 'commit', 'runs', 'reports'].forEach(function (c) { head.appendChild(el('th', {}, c)); });
  table.appendChild(el('thead')).appendChild(head);
  var body = el('tbody');
  var stepped = {};
  doc.trends.forEach(function (t) { t.steps.forEach(function (s) { stepped[s.commit] = true; }); });
  doc.commits.forEach(function (c) {
    var tr = el('tr', { 'data-commit': c.commit });
    if (stepped[c.commit]) tr.className = 'stepped';
    tr.appendChild(el('td', { 'class': 'num' }, String(c.seq)));
    tr.appendChild(el('td', { 'class': 'mono' }, c.commit));
    tr.appendChild(el('td', { 'class': 'num' }, String(c.reports.length)));
    var td = el('td');
    c.reports.forEach(function (r, k) {
      if (k) td.appendChild(document.createTextNode(' '));
      td.appendChild(el('a', { href: href(r), title: r, 'class': 'report' }, 'run ' + (k + 1)));
    });
    tr.appendChild(td);
    body.appendChild(tr);
  });
  table.appendChild(body);
  sec.appendChild(table);
  main.appendChild(sec);

  sbrig.ready = true;
  window.dispatchEvent(new CustomEvent('sbrig-ready'));
})();
