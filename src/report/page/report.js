/*
 * ndgc memory report: the page script (report.js).
 *
 * The C++ side (src/report/) embeds one JSON "report document" (format
 * "ndgc-report", version 1; see SCHEMA.md next to this file) in the element
 * #ndgc-data, and this script, after uPlot's, in the page. The script reads the
 * document and draws it: per-epoch charts of every run, then for the selected
 * run a stacked timeline by creation site, the leak table, the manager tree and
 * a diff of two snapshots. For source "live" it instead polls a running
 * ndgc-serve (the only time it touches the network).
 *
 * Names in the document are arbitrary text: they reach the page only through
 * textContent, attribute values and uPlot (which uses textContent too).
 * Errors while drawing are not caught, so they reach the console.
 *
 * Tests drive the page through window.ndgcReport (at the end of this file).
 */
(function () {
  'use strict';

  const MIB = 1048576;
  const PALETTE = [
    '#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#393b79',
    '#aec7e8', '#ffbb78', '#98df8a', '#ff9896', '#c5b0d5', '#c49c94', '#f7b6d2', '#9edae5', '#dbdb8d', '#637939',
  ];
  const OTHER_COLOR = '#a3a3a3';

  const state = {
    doc: null,
    runIndex: 0,
    charts: {epochs: [], timeline: [], live: []},
    timelineSeries: [], // {label, device, chart, idx, order} for the selected run
    highlighted: null, // site focused in the timeline
    timelineMode: 'growth', // 'growth': since the first sample; 'bytes': in use
    leak: null, // {rows, sortKey, sortDir, filter, selected, tbody}
    diff: null, // {from, to, rows}
    live: null,
  };

  // ---------------------------------------------------------------- helpers

  // createElement with a class, text and attributes; children are nodes or strings.
  function el(tag, opts, ...kids) {
    const e = document.createElement(tag);
    if (opts) {
      if (opts.cls) e.className = opts.cls;
      if (opts.id) e.id = opts.id;
      if (opts.text != null) e.textContent = String(opts.text);
      if (opts.attrs) for (const [k, v] of Object.entries(opts.attrs)) e.setAttribute(k, String(v));
    }
    for (const k of kids) if (k != null) e.append(k);
    return e;
  }

  function panelBody(id) {
    return document.querySelector('#' + id + ' .panel-body');
  }

  function note(parent, text, id) {
    return parent.appendChild(el('p', {cls: 'note', text, id}));
  }

  function count(n) {
    return Number(n).toLocaleString('en-US');
  }

  function signed(n) {
    return (n > 0 ? '+' : '') + count(n);
  }

  function human(bytes) {
    const b = Math.abs(bytes);
    const sign = bytes < 0 ? '-' : '';
    if (b < 1024) return sign + b + ' B';
    if (b < MIB) return sign + (b / 1024).toFixed(1) + ' KiB';
    if (b < 1024 * MIB) return sign + (b / MIB).toFixed(2) + ' MiB';
    return sign + (b / (1024 * MIB)).toFixed(2) + ' GiB';
  }

  function signedHuman(bytes) {
    return (bytes > 0 ? '+' : '') + human(bytes);
  }

  function fmtMiB(v) {
    if (v == null) return '--';
    if (v !== 0 && Math.abs(v) < 0.001) return human(Math.round(v * MIB));
    return v.toFixed(v !== 0 && Math.abs(v) < 0.1 ? 3 : 2) + ' MiB';
  }

  // Axis tick labels without float noise (0.30000000000000004).
  function tickValues(u, ticks) {
    return ticks.map((v) => String(+v.toFixed(6)));
  }

  // Ticks on whole numbers only, for counts such as epochs and steps.
  const WHOLE_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 1e6, 1e7];

  // A y range from 0 (stacked areas, bytes) with uPlot's usual headroom.
  function fromZero(u, min, max) {
    const r = uPlot.rangeNum(0, max > 0 ? max : 1, 0.1, true);
    return [0, r[1]];
  }

  // "dir/file.cpp:37" -> ["dir/file.cpp", 37]
  function splitSite(site) {
    const i = site.lastIndexOf(':');
    if (i > 0 && /^\d+$/.test(site.slice(i + 1))) return [site.slice(0, i), Number(site.slice(i + 1))];
    return [site, 0];
  }

  function compare(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function runLabel(run) {
    return run.rank == null ? run.name : run.name + ' · rank ' + run.rank;
  }

  function color(i) {
    return PALETTE[i % PALETTE.length];
  }

  function siteColor(site, i) {
    return site === 'other' ? OTHER_COLOR : color(i);
  }

  function withAlpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
  }

  function timeOfDay(date) {
    return date.toTimeString().slice(0, 8);
  }

  // --------------------------------------------------------------- tables

  // A table: columns are {key, title, num, fmt(value, row), tone}; rows are objects.
  function buildTable(id, columns, cls) {
    const head = el('tr');
    for (const c of columns) head.append(el('th', {cls: c.num ? 'num' : '', text: c.title}));
    const table = el('table', {id, cls: 'data' + (cls ? ' ' + cls : '')}, el('thead', null, head), el('tbody'));
    return table;
  }

  function fillRows(tbody, columns, rows, siteOf) {
    const trs = rows.map((row) => {
      const tr = el('tr');
      if (siteOf) tr.setAttribute('data-site', siteOf(row));
      for (const c of columns) {
        const v = row[c.key];
        const td = el('td', {text: c.fmt ? c.fmt(v, row) : v == null ? '—' : v});
        if (c.num) td.classList.add('num');
        if (c.tone && v > 0) td.classList.add('grow');
        if (c.tone && v < 0) td.classList.add('shrink');
        tr.append(td);
      }
      return tr;
    });
    tbody.replaceChildren(...trs);
  }

  // --------------------------------------------------------------- charts

  function chartWidth(parent, perRow) {
    const w = parent.clientWidth || 800;
    const each = perRow > 1 && w >= 900 ? (w - 16 * (perRow - 1)) / perRow : w;
    return Math.max(300, Math.floor(each));
  }

  function addChart(group, parent, opts, data, perRow) {
    const box = parent.appendChild(el('div', {cls: 'chart'}));
    opts.width = chartWidth(parent, perRow);
    const u = new uPlot(opts, data, box);
    u.ndgcResize = () => u.setSize({width: chartWidth(parent, perRow), height: opts.height});
    state.charts[group].push(u);
    return u;
  }

  function destroyCharts(group) {
    for (const u of state.charts[group]) u.destroy();
    state.charts[group] = [];
  }

  function onResize() {
    for (const group of Object.values(state.charts)) for (const u of group) u.ndgcResize();
  }

  // A div inside the plot that follows the cursor; describe(u, idx, top) returns
  // lines of text, or null to hide it.
  function tooltipPlugin(describe) {
    let tip = null;
    function show(u) {
      const {left, top, idx} = u.cursor;
      const lines = idx == null || left < 0 ? null : describe(u, idx, top);
      if (!lines) {
        tip.hidden = true;
        return;
      }
      tip.replaceChildren(el('div', {cls: 'tip-head', text: lines[0]}), ...lines.slice(1).map((t) => el('div', {text: t})));
      tip.hidden = false;
      const flip = left > u.over.clientWidth - tip.offsetWidth - 16;
      tip.style.left = (flip ? left - tip.offsetWidth - 12 : left + 12) + 'px';
      tip.style.top = Math.max(0, top - tip.offsetHeight - 8) + 'px';
    }
    return {
      hooks: {
        init: (u) => {
          tip = u.over.appendChild(el('div', {cls: 'tooltip'}));
          tip.hidden = true;
        },
        setCursor: show,
      },
    };
  }

  // The shown series nearest the cursor at a data index (by pixel distance).
  function nearestSeries(u, idx, top) {
    let best = -1;
    let bestDistance = Infinity;
    for (let i = 1; i < u.series.length; i++) {
      const v = u.data[i][idx];
      if (!u.series[i].show || v == null) continue;
      const d = Math.abs(u.valToPos(v, u.series[i].scale) - top);
      if (d < bestDistance) [best, bestDistance] = [i, d];
    }
    return best;
  }

  // Stacks per-series values (shown[k] false: left out of the stack) into
  // cumulative sums, with the uPlot bands that fill between neighbours.
  function stackData(raw, shown, fills) {
    const n = raw.length ? raw[0].length : 0;
    const acc = new Array(n).fill(0);
    const ys = raw.map((r, k) => (shown[k] ? r.map((v, i) => (acc[i] += v || 0)) : r.slice()));
    const bands = [];
    for (let k = 0; k < raw.length; k++) {
      if (!shown[k]) continue;
      let up = k + 1;
      while (up < raw.length && !shown[up]) up++;
      if (up < raw.length) bands.push({series: [up + 1, k + 1], fill: fills[up]});
    }
    return {ys, bands};
  }

  // Options and data of a stacked-area chart of `layers` ({label, color,
  // values}) over x, plus unstacked dashed `lines` ({label, values}).
  function stackedChart(title, xLabel, x, layers, lines, height) {
    const raw = layers.map((l) => l.values);
    const fills = layers.map((l) => withAlpha(l.color, 0.75));
    const stacked = stackData(raw, raw.map(() => true), fills);
    const extra = lines.map((l) => l.values);
    const series = [{label: xLabel}];
    layers.forEach((l, k) => {
      series.push({label: l.label, stroke: l.color, fill: fills[k], width: 1,
        value: (u, v, si, i) => (i == null ? '--' : fmtMiB(raw[k][i]))});
    });
    for (const l of lines) {
      series.push({label: l.label, stroke: '#222', width: 1.5, dash: [6, 4],
        value: (u, v) => fmtMiB(v)});
    }
    const restack = (u) => {
      const again = stackData(raw, raw.map((_, k) => u.series[k + 1].show), fills);
      u.delBand(null);
      for (const b of again.bands) u.addBand(b);
      u.setData([x, ...again.ys, ...extra]);
    };
    const opts = {
      title, height,
      focus: {alpha: 0.3},
      scales: {x: {time: false}, y: {range: fromZero}},
      axes: [xAxis(xLabel, x), {label: 'MiB', size: 60, values: tickValues}],
      series,
      bands: stacked.bands,
      hooks: {setSeries: [(u, i, o) => { if (o && o.show != null) restack(u); }]},
      plugins: [tooltipPlugin((u, idx, top) => describeLayer(u, idx, top, layers, raw))],
    };
    return {opts, data: [x, ...stacked.ys, ...extra]};
  }

  function xAxis(label, x) {
    const axis = {label, values: tickValues};
    if (x.every(Number.isInteger)) axis.incrs = WHOLE_INCRS;
    return axis;
  }

  // Tooltip of a stacked chart: the layer under the cursor.
  function describeLayer(u, idx, top, layers, raw) {
    const y = u.posToVal(top, 'y');
    for (let k = 0; k < layers.length; k++) {
      if (!u.series[k + 1].show || raw[k][idx] == null) continue;
      if (y <= u.data[k + 1][idx] && y >= u.data[k + 1][idx] - raw[k][idx] && raw[k][idx] > 0) {
        return [layers[k].label, u.series[0].label + ' ' + u.data[0][idx], fmtMiB(raw[k][idx])];
      }
    }
    return null;
  }

  // ------------------------------------------------------------ 1. epochs

  function renderEpochs() {
    const body = panelBody('epochs');
    body.replaceChildren();
    destroyCharts('epochs');
    const runs = state.doc.runs;
    if (!runs.some((r) => r.epochs.length > 0)) {
      note(body, state.doc.source === 'ndgc-train'
        ? 'No epochs: no run finished an epoch'
        : 'No epochs: this report was made from ' + state.doc.source + ', not by ndgc-train');
      return;
    }
    const xs = [...new Set(runs.flatMap((r) => r.epochs.map((e) => e.epoch)))].sort((a, b) => a - b);
    const column = (run, f) => xs.map((x) => {
      const e = run.epochs.find((ep) => ep.epoch === x);
      return e ? f(e) : null;
    });
    const box = body.appendChild(el('div', {cls: 'charts'}));
    const seconds = runs.map((r, i) => ({label: runLabel(r), color: color(i), values: column(r, (e) => e.seconds)}));
    epochChart(box, 'Epoch duration (s)', xs, seconds, (v) => v.toFixed(2) + ' s');
    const mib = runs.map((r, i) => ({label: runLabel(r), color: color(i), values: column(r, (e) => e.bytes_in_use / MIB)}));
    runs.forEach((r, i) => {
      if (r.device === 'cpu') return;
      mib.push({label: runLabel(r) + ' GPU', color: color(i), dash: [6, 4],
        values: column(r, (e) => e.gpu_allocated_bytes / MIB)});
    });
    epochChart(box, 'MiB in use', xs, mib, fmtMiB);
  }

  function epochChart(parent, title, xs, list, fmt) {
    const series = [{label: 'epoch'}];
    for (const s of list) {
      const one = {label: s.label, stroke: s.color, width: 2, points: {show: true, size: 7},
        value: (u, v) => (v == null ? '--' : fmt(v))};
      if (s.dash) one.dash = s.dash;
      series.push(one);
    }
    const opts = {
      title, height: 240,
      scales: {x: {time: false}},
      axes: [
        xAxis('epoch', xs),
        {size: 60, values: tickValues},
      ],
      series,
      plugins: [tooltipPlugin((u, idx, top) => {
        const i = nearestSeries(u, idx, top);
        return i < 0 ? null : [u.series[i].label, 'epoch ' + u.data[0][idx], fmt(u.data[i][idx])];
      })],
    };
    return addChart('epochs', parent, opts, [xs, ...list.map((s) => s.values)], 2);
  }

  // ---------------------------------------------------------- 2. timeline

  // Two views: growth since the first sample (the default: a leak is small
  // beside a dataset, and only its band grows) and bytes in use.
  const TIMELINE_MODES = [
    {key: 'growth', text: 'growth since the first sample'},
    {key: 'bytes', text: 'bytes in use'},
  ];

  function renderTimeline(run) {
    const body = panelBody('timeline');
    body.replaceChildren();
    destroyCharts('timeline');
    state.timelineSeries = [];
    const highlighted = state.highlighted;
    state.highlighted = null;
    const t = run.timeline;
    if (!t) return note(body, 'No timeline: run ndgc-train with --memory-every N');
    if (!t.sites.length) return note(body, 'No timeline: no arrays were sampled');
    body.appendChild(modePicker(run));
    const box = body.appendChild(el('div', {cls: 'charts'}));
    const host = t.sites.filter((s) => s.device === 'cpu');
    const gpu = t.sites.filter((s) => s.device !== 'cpu');
    if (host.length) timelineChart(box, 'Host memory by creation site', t, host, t.host_bytes, 'allocator host bytes');
    if (gpu.length) {
      const devices = [...new Set(gpu.map((s) => s.device))].join(', ');
      timelineChart(box, 'GPU memory by creation site (' + devices + ')', t, gpu, t.gpu_bytes, 'allocator GPU bytes');
    }
    state.timelineSeries.sort((a, b) => a.order - b.order);
    if (highlighted != null) highlightTimeline(highlighted);
  }

  function modePicker(run) {
    const select = el('select', {attrs: {id: 'timeline-mode'}});
    for (const m of TIMELINE_MODES) {
      const option = select.appendChild(el('option', {text: m.text, attrs: {value: m.key}}));
      option.selected = m.key === state.timelineMode;
    }
    select.addEventListener('change', () => {
      state.timelineMode = select.value;
      renderTimeline(run);
    });
    return el('p', {}, el('label', {text: 'Show ', attrs: {for: 'timeline-mode'}}), select);
  }

  // A series as the current mode shows it, in MiB.
  function modeValues(bytes) {
    if (state.timelineMode === 'bytes') return bytes.map((b) => b / MIB);
    const first = bytes.length ? bytes[0] : 0;
    return bytes.map((b) => Math.max(0, b - first) / MIB);
  }

  function timelineChart(parent, title, t, sites, total, totalLabel) {
    const layers = sites.map((s) => {
      const order = t.sites.indexOf(s);
      return {label: s.site, color: siteColor(s.site, order), values: modeValues(s.bytes)};
    });
    const lines = total.length === t.x.length && total.some((b) => b > 0)
      ? [{label: totalLabel, values: modeValues(total)}] : [];
    const what = state.timelineMode === 'bytes' ? '' : ', growth since the first sample';
    const {opts, data} = stackedChart(title + what + ' (MiB)', t.x_label, t.x, layers, lines, 320);
    const u = addChart('timeline', parent, opts, data, 1);
    sites.forEach((s, k) => {
      state.timelineSeries.push({label: s.site, device: s.device, chart: u, idx: k + 1, order: t.sites.indexOf(s)});
    });
  }

  // Focuses the site's band in the timeline charts (dimming the others);
  // null clears. Returns whether the site is among the series.
  function highlightTimeline(site) {
    for (const u of state.charts.timeline) u.setSeries(null, {focus: true});
    const hits = state.timelineSeries.filter((s) => site != null && s.label === site);
    for (const s of hits) s.chart.setSeries(s.idx, {focus: true});
    state.highlighted = hits.length ? site : null;
    return hits.length > 0;
  }

  // ------------------------------------------------------------- 3. leaks

  const LEAK_COLUMNS = [
    {key: 'site', title: 'Site'},
    {key: 'arrays', title: 'Arrays', num: true, fmt: count},
    {key: 'bytes', title: 'Bytes', num: true, fmt: human},
    {key: 'growth', title: 'Growth', num: true, fmt: signedHuman, tone: true},
    {key: 'arrayGrowth', title: 'Array growth', num: true, fmt: signed, tone: true},
    {key: 'managers', title: 'Managers', fmt: (v) => v || '—'},
    {key: 'orphans', title: 'Orphans', num: true, fmt: count},
    {key: 'reclaimed', title: 'Reclaimed', fmt: (v, row) => row.reclaimedText},
    {key: 'inWorkspace', title: 'In workspace'},
  ];

  // Site -> {arrays, bytes, orphans, managers: Set, inWorkspace} of one snapshot.
  function bySite(snapshot) {
    const m = new Map();
    for (const g of snapshot.groups) {
      let r = m.get(g.site);
      if (!r) m.set(g.site, (r = {arrays: 0, bytes: 0, orphans: 0, managers: new Set(), inWorkspace: false}));
      r.arrays += g.arrays;
      r.bytes += g.bytes;
      r.orphans += g.orphans;
      r.managers.add(g.manager);
      if (g.workspace !== '') r.inWorkspace = true;
    }
    return m;
  }

  // Site -> {arrays, text: "12 by auto-close, 3 by trace"}.
  function reclaimedBySite(reclaimed) {
    const m = new Map();
    for (const r of reclaimed) {
      if (!m.has(r.site)) m.set(r.site, {arrays: 0, by: new Map()});
      const e = m.get(r.site);
      e.arrays += r.arrays;
      e.by.set(r.by, (e.by.get(r.by) || 0) + r.arrays);
    }
    for (const e of m.values()) e.text = [...e.by].map(([by, n]) => count(n) + ' by ' + by).join(', ');
    return m;
  }

  // One row per site of the last snapshot (and of the first, and of run.reclaimed).
  function leakRowsOf(run) {
    const snaps = run.snapshots;
    const last = bySite(snaps[snaps.length - 1]);
    const first = snaps.length > 1 ? bySite(snaps[0]) : new Map();
    const reclaimed = reclaimedBySite(run.reclaimed);
    const none = {arrays: 0, bytes: 0, orphans: 0, managers: new Set(), inWorkspace: false};
    const sites = new Set([...last.keys(), ...first.keys(), ...reclaimed.keys()]);
    return [...sites].map((site) => {
      const l = last.get(site) || none;
      const f = first.get(site) || none;
      const r = reclaimed.get(site);
      return {
        site, arrays: l.arrays, bytes: l.bytes, orphans: l.orphans,
        growth: l.bytes - f.bytes, arrayGrowth: l.arrays - f.arrays,
        managers: [...(l.managers.size ? l.managers : f.managers)].sort().join(', '),
        reclaimed: r ? r.arrays : 0, reclaimedText: r ? r.text : '—',
        inWorkspace: l.inWorkspace ? 'yes' : 'no',
      };
    });
  }

  function defaultLeakOrder(a, b) {
    return b.growth - a.growth || b.bytes - a.bytes || compare(a.site, b.site);
  }

  function renderLeaks(run) {
    const body = panelBody('leaks');
    body.replaceChildren();
    state.leak = null;
    if (!run.snapshots.length) return note(body, 'No snapshots: this run took none, so there is nothing to group by site');
    const leak = state.leak = {rows: leakRowsOf(run), sortKey: null, sortDir: -1, filter: '', selected: null};
    const filter = el('input', {id: 'leak-filter', attrs: {type: 'search', placeholder: 'site or manager', 'aria-label': 'Filter sites'}});
    const shown = el('span', {cls: 'muted', id: 'leak-count'});
    body.append(el('div', {cls: 'toolbar'}, el('label', {text: 'Filter', attrs: {for: 'leak-filter'}}), filter, shown));
    const table = buildTable('leak-table', LEAK_COLUMNS, 'clickable');
    body.append(el('div', {cls: 'table-wrap'}, table));
    body.append(el('p', {id: 'leak-note', cls: 'note'}));
    body.append(el('div', {id: 'site-arrays'}));
    leak.tbody = table.tBodies[0];
    leak.heads = [...table.tHead.rows[0].cells];
    leak.heads.forEach((th, i) => {
      th.classList.add('sortable');
      th.title = 'Sort by ' + LEAK_COLUMNS[i].title;
      th.addEventListener('click', () => sortLeaks(LEAK_COLUMNS[i].key));
    });
    filter.addEventListener('input', () => {
      leak.filter = filter.value;
      drawLeakRows();
    });
    leak.tbody.addEventListener('click', (e) => {
      const tr = e.target.closest('tr[data-site]');
      if (tr) selectSite(tr.getAttribute('data-site'));
    });
    drawLeakRows();
  }

  function sortLeaks(key) {
    const leak = state.leak;
    const numeric = LEAK_COLUMNS.find((c) => c.key === key).num || key === 'reclaimed';
    leak.sortDir = leak.sortKey === key ? -leak.sortDir : numeric ? -1 : 1;
    leak.sortKey = key;
    drawLeakRows();
  }

  function visibleLeakRows() {
    const leak = state.leak;
    const needle = leak.filter.trim().toLowerCase();
    const rows = leak.rows.filter((r) => !needle || r.site.toLowerCase().includes(needle) ||
      r.managers.toLowerCase().includes(needle));
    const key = leak.sortKey;
    const by = key == null ? defaultLeakOrder
      : (a, b) => leak.sortDir * compare(a[key], b[key]) || defaultLeakOrder(a, b);
    return rows.sort(by);
  }

  function drawLeakRows() {
    const leak = state.leak;
    const rows = visibleLeakRows();
    fillRows(leak.tbody, LEAK_COLUMNS, rows, (r) => r.site);
    for (const tr of leak.tbody.rows) tr.classList.toggle('selected', tr.getAttribute('data-site') === leak.selected);
    leak.heads.forEach((th, i) => {
      const on = LEAK_COLUMNS[i].key === leak.sortKey;
      th.setAttribute('aria-sort', on ? (leak.sortDir > 0 ? 'ascending' : 'descending') : 'none');
      th.replaceChildren(LEAK_COLUMNS[i].title, on ? el('span', {cls: 'arrow', text: leak.sortDir > 0 ? '▲' : '▼'}) : '');
    });
    document.getElementById('leak-count').textContent = rows.length + ' of ' + leak.rows.length + ' sites';
    leak.shown = rows.map((r) => r.site);
  }

  function selectSite(site) {
    const leak = state.leak;
    leak.selected = site;
    for (const tr of leak.tbody.rows) tr.classList.toggle('selected', tr.getAttribute('data-site') === site);
    const run = currentRun();
    const found = highlightTimeline(site);
    const line = document.getElementById('leak-note');
    if (found) line.textContent = 'Highlighted in the timeline: ' + site;
    else if (!run.timeline) line.textContent = 'This run has no timeline to highlight ' + site + ' in.';
    else line.textContent = site + ' is not among the timeline\'s series (it is part of "other" or was never sampled).';
    renderSiteArrays(run, site);
  }

  const ITEM_COLUMNS = [
    {key: 'uuid', title: 'UUID'},
    {key: 'name', title: 'Name', fmt: (v) => v || '—'},
    {key: 'manager', title: 'Manager'},
    {key: 'shape', title: 'Shape', fmt: (v) => (v ? '[' + v.join(', ') + ']' : '—')},
    {key: 'dtype', title: 'Dtype', fmt: (v) => v || '—'},
    {key: 'bytes', title: 'Bytes', num: true, fmt: human},
    {key: 'handles', title: 'Handles', num: true, fmt: (v) => (v === 0 ? '0 (orphan)' : count(v))},
    {key: 'workspace', title: 'Workspace', fmt: (v) => v || '—'},
  ];

  // Every tree item, with the path of the node holding it.
  function treeItems(node, out) {
    for (const item of node.items) out.push(Object.assign({manager: node.path}, item));
    for (const child of node.children) treeItems(child, out);
    return out;
  }

  function renderSiteArrays(run, site) {
    const box = document.getElementById('site-arrays');
    box.replaceChildren(el('h3', {text: 'Arrays created at ' + site}));
    if (!run.tree) return note(box, 'No manager tree in this run, so no arrays to list.');
    const items = treeItems(run.tree, []).filter((i) => i.site === site);
    const row = state.leak.rows.find((r) => r.site === site);
    const table = buildTable('site-array-table', ITEM_COLUMNS);
    fillRows(table.tBodies[0], ITEM_COLUMNS, items);
    if (items.length) box.append(el('div', {cls: 'table-wrap'}, table));
    const more = (row ? row.arrays : 0) - items.length;
    if (!items.length) note(box, 'The manager tree lists no arrays of this site.');
    if (more > 0) note(box, count(more) + ' more not listed');
  }

  // -------------------------------------------------------------- 4. tree

  function renderTree(run) {
    const body = panelBody('tree');
    body.replaceChildren();
    if (!run.tree) return note(body, 'No manager tree: this run has no snapshot of its managers');
    body.append(el('div', {cls: 'tree'}, treeNode(run.tree, run.tree.bytes_below, 0)));
  }

  function treeNode(node, rootBytes, depth) {
    const share = rootBytes > 0 ? node.bytes_below / rootBytes : 0;
    const fill = el('div', {cls: 'bar-fill'});
    fill.style.width = (100 * share).toFixed(1) + '%';
    const line = el('span', {cls: 'node-line'},
      el('span', {cls: 'node-name', text: node.name === '' ? node.path || '(root)' : node.name}),
      el('span', {cls: 'node-num', text: human(node.bytes_below)}),
      el('span', {cls: 'node-num', text: count(node.arrays_below) + (node.arrays_below === 1 ? ' array' : ' arrays')}),
      el('span', {cls: 'bar', attrs: {title: (100 * share).toFixed(1) + '% of all'}}, fill),
      el('span', {cls: 'muted', text: 'own: ' + human(node.bytes) + ' in ' + count(node.arrays)}));
    if (node.workspace_bytes > 0) line.append(el('span', {cls: 'badge ws', text: 'workspace ' + human(node.workspace_bytes)}));
    if (node.device !== 'cpu') line.append(el('span', {cls: 'badge', text: node.device}));
    if (!node.open) line.append(el('span', {cls: 'badge closed', text: 'closed'}));
    const summary = el('summary', {attrs: {title: node.path}}, line);
    const details = el('details', null, summary);
    details.open = depth < 2;
    if (node.items.length || node.items_left_out > 0) details.append(itemList(node));
    for (const child of node.children) details.append(treeNode(child, rootBytes, depth + 1));
    return details;
  }

  const NODE_ITEM_COLUMNS = [
    {key: 'uuid', title: 'UUID'},
    {key: 'name', title: 'Name', fmt: (v) => v || '—'},
    {key: 'shape', title: 'Shape', fmt: (v) => (v ? '[' + v.join(', ') + ']' : '—')},
    {key: 'dtype', title: 'Dtype', fmt: (v) => v || '—'},
    {key: 'bytes', title: 'Bytes', num: true, fmt: human},
    {key: 'handles', title: 'Handles', num: true, fmt: (v) => (v === 0 ? '0 (orphan)' : count(v))},
    {key: 'site', title: 'Site'},
    {key: 'workspace', title: 'Storage',
      fmt: (v, row) => (v ? "in workspace '" + v + "'" : '') + (row.view ? (v ? ', view' : 'view') : '')},
  ];

  // The node's own arrays, in a closed <details> so the tree stays compact.
  function itemList(node) {
    const table = buildTable(null, NODE_ITEM_COLUMNS, 'items');
    table.removeAttribute('id');
    fillRows(table.tBodies[0], NODE_ITEM_COLUMNS, node.items);
    const more = node.items_left_out > 0 ? ', ' + count(node.items_left_out) + ' more not listed' : '';
    const inWorkspace = node.items.filter((i) => i.workspace !== '').length;
    const summary = el('summary', {cls: 'items-summary',
      text: count(node.items.length) + ' arrays listed' + more + (inWorkspace ? ', ' + inWorkspace + ' in a workspace' : '')});
    return el('details', {cls: 'items-box'}, summary, el('div', {cls: 'table-wrap'}, table));
  }

  // -------------------------------------------------------------- 5. diff

  const DIFF_COLUMNS = [
    {key: 'arrays', title: '+arrays', num: true, fmt: signed, tone: true},
    {key: 'bytes', title: '+bytes', num: true, fmt: signedHuman, tone: true},
    {key: 'manager', title: 'Manager'},
    {key: 'site', title: 'Site'},
    {key: 'workspace', title: 'Workspace', fmt: (v) => v || '—'},
    {key: 'device', title: 'Device'},
  ];

  function deviceOrder(a, b) {
    if (a === b) return 0;
    if (a === 'cpu') return -1;
    if (b === 'cpu') return 1;
    return compare(a, b);
  }

  // debug::diff in the page: groups by (manager, site, workspace, device)
  // whose arrays or bytes changed, largest byte growth first.
  function diffSnapshots(before, after) {
    const groups = new Map();
    const fold = (snapshot, side) => {
      for (const g of snapshot.groups) {
        const key = JSON.stringify([g.manager, g.site, g.workspace, g.device]);
        let d = groups.get(key);
        if (!d) groups.set(key, (d = {manager: g.manager, site: g.site, workspace: g.workspace, device: g.device,
          arrays_before: 0, arrays_after: 0, bytes_before: 0, bytes_after: 0}));
        d['arrays_' + side] += g.arrays;
        d['bytes_' + side] += g.bytes;
      }
    };
    fold(before, 'before');
    fold(after, 'after');
    const rows = [...groups.values()]
      .filter((g) => g.arrays_before !== g.arrays_after || g.bytes_before !== g.bytes_after)
      .map((g) => Object.assign(g, {arrays: g.arrays_after - g.arrays_before, bytes: g.bytes_after - g.bytes_before}));
    return rows.sort((a, b) => {
      const [fa, la] = splitSite(a.site);
      const [fb, lb] = splitSite(b.site);
      return b.bytes - a.bytes || b.arrays - a.arrays || compare(a.manager, b.manager) || compare(fa, fb) ||
        la - lb || compare(a.workspace, b.workspace) || deviceOrder(a.device, b.device);
    });
  }

  function totals(snapshot) {
    let arrays = 0;
    let bytes = 0;
    for (const g of snapshot.groups) [arrays, bytes] = [arrays + g.arrays, bytes + g.bytes];
    return {arrays, bytes};
  }

  function renderDiff(run) {
    const body = panelBody('diff');
    body.replaceChildren();
    state.diff = null;
    const snaps = run.snapshots;
    if (!snaps.length) return note(body, 'No snapshots: this run took none, so there is nothing to compare');
    const pick = (id) => {
      const s = el('select', {id});
      snaps.forEach((snap, i) => s.append(new Option(snap.label, String(i))));
      s.addEventListener('change', () => updateDiff(Number(from.value), Number(to.value)));
      return s;
    };
    const from = pick('diff-from');
    const to = pick('diff-to');
    body.append(el('div', {cls: 'toolbar'},
      el('label', {text: 'From', attrs: {for: 'diff-from'}}), from,
      el('label', {text: 'to', attrs: {for: 'diff-to'}}), to));
    body.append(el('p', {id: 'diff-summary'}));
    body.append(el('div', {cls: 'table-wrap'}, buildTable('diff-table', DIFF_COLUMNS)));
    body.append(el('p', {id: 'diff-empty', cls: 'note'}));
    state.diff = {from: 0, to: snaps.length - 1, rows: [], selects: [from, to]};
    updateDiff(0, snaps.length - 1);
  }

  function updateDiff(fromIndex, toIndex) {
    const snaps = currentRun().snapshots;
    const d = state.diff;
    [d.from, d.to] = [fromIndex, toIndex];
    d.selects[0].value = String(fromIndex);
    d.selects[1].value = String(toIndex);
    const before = snaps[fromIndex];
    const after = snaps[toIndex];
    d.rows = diffSnapshots(before, after);
    fillRows(document.querySelector('#diff-table tbody'), DIFF_COLUMNS, d.rows, (r) => r.site);
    const a = totals(before);
    const b = totals(after);
    document.getElementById('diff-summary').textContent =
      before.label + ' → ' + after.label + ': ' + count(a.arrays) + ' → ' + count(b.arrays) + ' arrays (' +
      signed(b.arrays - a.arrays) + '), ' + human(a.bytes) + ' → ' + human(b.bytes) + ' (' +
      signedHuman(b.bytes - a.bytes) + ')';
    document.getElementById('diff-empty').textContent = d.rows.length ? '' : 'No group changed between these snapshots.';
  }

  // --------------------------------------------------------- runs, header

  function currentRun() {
    return state.doc.runs[state.runIndex];
  }

  function renderHeader() {
    const doc = state.doc;
    document.title = doc.title;
    document.getElementById('title').textContent = doc.title;
    const made = new Date(doc.created_ms);
    const what = doc.source === 'live' ? 'live view of ndgc-serve'
      : doc.runs.length + (doc.runs.length === 1 ? ' run' : ' runs');
    document.getElementById('source').textContent =
      'Source: ' + doc.source + ' · ' + what + ' · made ' + made.toLocaleString();
    const select = document.getElementById('run-select');
    const ranked = doc.runs.some((r) => r.rank != null);
    document.getElementById('run-label').textContent = ranked ? 'Rank' : 'Run';
    doc.runs.forEach((r, i) => select.append(new Option(runLabel(r), String(i))));
    select.addEventListener('change', () => selectRun(Number(select.value)));
    document.getElementById('run-picker').hidden = doc.runs.length === 0;
  }

  function renderFailure(run) {
    const p = document.getElementById('failure');
    p.hidden = !run.failure;
    p.textContent = run.failure ? runLabel(run) + ' failed: ' + run.failure.where + ' — ' + run.failure.message : '';
  }

  function selectRun(i) {
    if (!(i >= 0 && i < state.doc.runs.length)) throw new RangeError('no run ' + i);
    state.runIndex = i;
    document.getElementById('run-select').value = String(i);
    const run = currentRun();
    renderFailure(run);
    renderTimeline(run);
    renderLeaks(run);
    renderTree(run);
    renderDiff(run);
  }

  function renderNoRuns() {
    for (const id of ['epochs', 'timeline', 'leaks', 'tree', 'diff']) {
      panelBody(id).replaceChildren();
      note(panelBody(id), 'No runs in this report');
    }
  }

  // -------------------------------------------------------------- 6. live

  const LIVE_MAX_SAMPLES = 3600;

  const LIVE_COLUMNS = [
    {key: 'site', title: 'Site'},
    {key: 'arrays', title: '+arrays', num: true, fmt: signed, tone: true},
    {key: 'bytes', title: '+bytes', num: true, fmt: signedHuman, tone: true},
  ];

  // fetch, same origin only (the browser adds the HTTP credentials itself).
  async function request(method, url) {
    const r = await fetch(url, {method, credentials: 'same-origin', cache: 'no-store'});
    if (!r.ok) {
      const text = (await r.text().catch(() => '')).trim().split('\n')[0].slice(0, 200);
      throw new Error(r.status + ': ' + (text || r.statusText));
    }
    return r;
  }

  // Sum of the ndgc_requests_total lines and the ndgc_live_arrays value.
  function parseMetrics(text) {
    let requests = 0;
    let arrays = null;
    const line = /^([A-Za-z_:][\w:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?\s+(\S+)/;
    for (const l of text.split('\n')) {
      const m = line.exec(l);
      if (!m) continue;
      if (m[1] === 'ndgc_requests_total') requests += Number(m[3]);
      else if (m[1] === 'ndgc_live_arrays') arrays = (arrays || 0) + Number(m[3]);
    }
    return {requests, arrays};
  }

  function startLive(live) {
    for (const id of ['epochs', 'timeline', 'leaks', 'tree', 'diff']) document.getElementById(id).hidden = true;
    const section = document.getElementById('live');
    section.hidden = false;
    const body = panelBody('live');
    const table = buildTable('live-sites', LIVE_COLUMNS);
    body.append(
      el('p', {id: 'live-status', text: 'taking the baseline snapshot…'}),
      el('div', {cls: 'charts'}, el('div', {id: 'live-totals', cls: 'live-box'}), el('div', {id: 'live-by-site', cls: 'live-box'})),
      el('h3', {text: 'Sites that grew since the page opened'}),
      el('div', {cls: 'table-wrap'}, table));
    state.live = {every: live.every_ms > 0 ? live.every_ms : 1000, t0: performance.now(), samples: [],
      sites: new Map(), growing: [], error: null, lastAt: null, bySiteKey: ''};
    request('POST', live.snapshot)
      .then(() => null, (e) => e)
      .then((e) => {
        if (e) state.live.error = 'baseline: ' + e.message;
        renderLiveStatus();
        pollLive(live);
      });
  }

  function pollLive(live) {
    const L = state.live;
    Promise.all([request('GET', live.diff).then((r) => r.json()), request('GET', live.metrics).then((r) => r.text())])
      .then(([diff, metrics]) => ({diff, metrics}), (e) => {
        L.error = e.message;
        return null;
      })
      .then((sample) => {
        setTimeout(() => pollLive(live), L.every);
        if (sample) {
          L.error = null;
          addLiveSample(sample.diff, parseMetrics(sample.metrics));
          renderLiveCharts();
        }
        renderLiveStatus();
      });
  }

  function addLiveSample(diff, metrics) {
    const L = state.live;
    L.samples.push({t: (performance.now() - L.t0) / 1000, requests: metrics.requests, arrays: metrics.arrays,
      bytes: diff.after.bytes});
    L.lastAt = new Date();
    const bytes = new Map();
    const growth = new Map();
    for (const g of diff.groups) {
      const site = g.site.file + ':' + g.site.line;
      bytes.set(site, (bytes.get(site) || 0) + g.bytes_after);
      const e = growth.get(site) || {site, arrays: 0, bytes: 0};
      e.arrays += g.arrays_after - g.arrays_before;
      e.bytes += g.bytes_after - g.bytes_before;
      growth.set(site, e);
    }
    const n = L.samples.length;
    for (const [site, values] of L.sites) values.push(bytes.get(site) || 0);
    for (const [site, b] of bytes) if (!L.sites.has(site)) L.sites.set(site, new Array(n - 1).fill(0).concat([b]));
    // An hour at one sample a second: a page left open does not grow without bound.
    if (L.samples.length > LIVE_MAX_SAMPLES) {
      L.samples.shift();
      for (const values of L.sites.values()) values.shift();
    }
    L.growing = [...growth.values()].filter((g) => g.arrays > 0 || g.bytes > 0)
      .sort((a, b) => b.bytes - a.bytes || b.arrays - a.arrays || compare(a.site, b.site));
  }

  function renderLiveStatus() {
    const L = state.live;
    const status = document.getElementById('live-status');
    status.classList.toggle('failure', L.error != null);
    status.textContent = L.error != null ? L.error
      : 'polling every ' + L.every / 1000 + ' s; ' + L.samples.length + ' samples' +
        (L.lastAt ? '; last at ' + timeOfDay(L.lastAt) : '');
  }

  function renderLiveCharts() {
    const L = state.live;
    const x = L.samples.map((s) => s.t);
    const data = [x, L.samples.map((s) => s.requests), L.samples.map((s) => s.arrays), L.samples.map((s) => s.bytes / MIB)];
    if (!L.totals) L.totals = liveTotalsChart(data);
    else L.totals.setData(data);
    liveSiteChart(x);
    fillRows(document.querySelector('#live-sites tbody'), LIVE_COLUMNS, L.growing, (r) => r.site);
  }

  function liveTotalsChart(data) {
    const opts = {
      title: 'Requests, live arrays and MiB over time', height: 260,
      scales: {x: {time: false}},
      axes: [
        {label: 'seconds since the page opened', values: tickValues},
        {label: 'count', size: 60, values: tickValues},
        {label: 'MiB', scale: 'mib', side: 1, grid: {show: false}, size: 60, values: tickValues},
      ],
      series: [
        {label: 's', value: (u, v) => (v == null ? '--' : v.toFixed(1))},
        {label: 'requests', stroke: color(0), width: 2},
        {label: 'live arrays', stroke: color(1), width: 2},
        {label: 'MiB', stroke: color(2), width: 2, scale: 'mib', value: (u, v) => fmtMiB(v)},
      ],
    };
    return addChart('live', document.getElementById('live-totals'), opts, data, 1);
  }

  // Stacked bytes_after by site: the 8 largest sites, then "other".
  function liveSiteChart(x) {
    const L = state.live;
    const peak = (values) => Math.max(...values);
    const ranked = [...L.sites].sort((a, b) => peak(b[1]) - peak(a[1]) || compare(a[0], b[0]));
    const layers = ranked.slice(0, 8).map(([site, values], i) => ({label: site, color: color(i), values: values.map((b) => b / MIB)}));
    if (ranked.length > 8) {
      const rest = x.map((_, i) => ranked.slice(8).reduce((s, [, v]) => s + v[i], 0) / MIB);
      layers.push({label: 'other', color: OTHER_COLOR, values: rest});
    }
    const key = JSON.stringify(layers.map((l) => l.label));
    const box = document.getElementById('live-by-site');
    const {opts, data} = stackedChart('MiB of changed groups by site', 'seconds since the page opened', x, layers, [], 260);
    if (L.bySite && key === L.bySiteKey) return L.bySite.setData(data);
    if (L.bySite) {
      state.charts.live = state.charts.live.filter((u) => u !== L.bySite);
      L.bySite.destroy();
    }
    box.replaceChildren();
    L.bySiteKey = key;
    L.bySite = layers.length ? addChart('live', box, opts, data, 1) : null;
    if (!layers.length) note(box, 'No site changed since the baseline yet.');
  }

  // ---------------------------------------------------------------- main

  const api = {
    ready: false,
    readyMs: null, // performance.now() when the first render finished
    selectRun: (i) => selectRun(i),
    runIndex: () => state.runIndex,
    timelineSeries: () => state.timelineSeries.map((s) => ({label: s.label, device: s.device,
      focused: state.highlighted != null && s.label === state.highlighted})),
    highlightedSite: () => state.highlighted,
    leakRows: () => (state.leak ? state.leak.shown.slice() : []),
    selectSite: (site) => selectSite(site),
    diffRows: () => (state.diff ? state.diff.rows.map((r) => ({site: r.site, manager: r.manager, arrays: r.arrays, bytes: r.bytes})) : []),
    setDiff: (fromIndex, toIndex) => {
      const n = state.diff ? currentRun().snapshots.length : 0;
      if (!(fromIndex >= 0 && fromIndex < n && toIndex >= 0 && toIndex < n)) throw new RangeError('no such snapshots');
      updateDiff(fromIndex, toIndex);
    },
    live: () => {
      const L = state.live;
      const samples = L ? L.samples : [];
      return {
        samples: samples.length,
        requests: samples.map((s) => s.requests),
        arrays: samples.map((s) => s.arrays),
        bytes: samples.map((s) => s.bytes),
        growing: L ? L.growing.map((g) => ({site: g.site, arrays: g.arrays, bytes: g.bytes})) : [],
      };
    },
  };

  function main() {
    window.ndgcReport = api;
    state.doc = JSON.parse(document.getElementById('ndgc-data').textContent);
    renderHeader();
    if (state.doc.source === 'live' && state.doc.live) {
      startLive(state.doc.live);
    } else if (state.doc.runs.length === 0) {
      renderNoRuns();
    } else {
      renderEpochs();
      selectRun(0);
    }
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        onResize();
      });
    });
    api.readyMs = performance.now();
    api.ready = true;
  }

  main();
})();
