/*
 * viewer_base.js — what the report's scripts share, published as
 * window.fsc: the data from the JSON block #data, formatting with units,
 * DOM and SVG helpers (text only, never markup), tooltips, axis ticks, and
 * the x range that the time charts zoom and pan together. The other
 * viewer_*.js files each add one part of the page; viewer_main.js draws it.
 * Every string from the trace goes in through textContent or an attribute
 * value.
 */
window.fsc = (function () {
  'use strict';

  var SVGNS = document.getElementById('svg-ns').namespaceURI;
  /* A job page names the data block of the run shown (viewer_runs.js). */
  var D = JSON.parse(document.getElementById(window.fscDataId || 'data').textContent);
  /* Listeners on window go through onWindow, so that the picker of a job
   * page can take them off before it draws another run. */
  var WINDOW_LISTENERS = window.fscWindowListeners = [];
  function onWindow(type, fn) {
    window.addEventListener(type, fn);
    WINDOW_LISTENERS.push([type, fn]);
  }
  var TAGS = D.tags || [];

  /* ---- formatting ------------------------------------------------------ */

  var BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

  function fmtBytes(b) {
    if (b === null || b === undefined) return '\u2014';
    var neg = b < 0, v = Math.abs(b), i = 0;
    if (v < 1024) return (neg ? '-' : '') + v + ' B';
    while (v >= 1024 && i < BYTE_UNITS.length - 1) { v /= 1024; i++; }
    return (neg ? '-' : '') + v.toFixed(2) + ' ' + BYTE_UNITS[i];
  }
  function fmtPct(r) {
    if (r === null || r === undefined || !isFinite(r)) return '\u2014';
    var p = 100 * r;
    return p.toFixed(p > 0 && p < 1 ? 2 : 1) + ' %';
  }
  function fmtCount(n) {
    if (n === null || n === undefined) return '\u2014';
    return Number(n).toLocaleString('en-US');
  }
  var TIME_UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, '\u00b5s'], [1, 'ns']];
  function timeUnit(ns) {
    for (var i = 0; i < TIME_UNITS.length; i++)
      if (Math.abs(ns) >= TIME_UNITS[i][0]) return TIME_UNITS[i];
    return TIME_UNITS[TIME_UNITS.length - 1];
  }
  function fmtTime(ns) {
    if (ns === null || ns === undefined) return '\u2014';
    if (ns === 0) return '0 s';
    var u = timeUnit(ns), v = ns / u[0];
    return (u[1] === 'ns' ? v.toFixed(0) : v.toFixed(v >= 100 ? 1 : 3)) + ' ' + u[1];
  }
  function fmtAddr(a) {
    if (a === null || a === undefined) return '\u2014';
    return '0x' + Number(a).toString(16);
  }
  function tagName(t) {
    if (typeof t === 'string') return t;
    if (t === null || t === undefined || t < 0 || t >= TAGS.length) return '(no tag)';
    return TAGS[t] === '' ? '(no tag)' : TAGS[t];
  }
  /* Tag paths of Python frames get long; the innermost names say the most. */
  function shortTag(t, max) {
    /* A stack is named by its call site, as report names it ("file.py:123 func"). */
    var sites = D.sites, ts = D.tag_site;
    var name = typeof t === 'number' && t >= 0 && sites && ts && ts[t] !== undefined && sites[ts[t]] ? sites[ts[t]] : tagName(t);
    max = max || 90;
    return name.length > max ? '\u2026' + name.slice(name.length - max + 1) : name;
  }
  /* The snapshot's history entry behind event seq: device_traces[d][k] for
   * an imported snapshot whose events map onto its entries (D.trace_index:
   * the replay's own splits and merges, as differences), else ''. */
  var TRACE = (function () {
    var ti = D.trace_index;
    if (!ti || !ti.derived) return null;
    var v = [], acc = 0;
    ti.derived.forEach(function (d) { acc += d; v.push(acc); });
    return { device: ti.device, derived: v };
  })();
  function traceEntry(seq) {
    if (!TRACE || seq === null || seq === undefined || seq < 0) return '';
    var lo = 0, hi = TRACE.derived.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (TRACE.derived[mid] < seq) lo = mid + 1; else hi = mid; }
    if (lo < TRACE.derived.length && TRACE.derived[lo] === seq) return 'a split or merge of the replay (no entry of its own)';
    return 'device_traces[' + TRACE.device + '][' + (seq - lo) + ']';
  }
  function tagCell(t) { return { cls: 'tag', text: shortTag(t, 64), title: tagName(t) }; }

  /* ---- DOM helpers ----------------------------------------------------- */

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function svText(parent, x, y, text, attrs) {
    var t = sv('text', attrs || {}, parent);
    t.setAttribute('x', x);
    t.setAttribute('y', y);
    t.textContent = text;
    return t;
  }
  /* Capture is a nicety (drags continue outside the element); never fatal. */
  function capture(elem, evt) {
    try { elem.setPointerCapture(evt.pointerId); } catch (e) { /* no active pointer */ }
  }
  function release(elem, evt) {
    try { if (elem.hasPointerCapture(evt.pointerId)) elem.releasePointerCapture(evt.pointerId); } catch (e) { /* ignore */ }
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function byId(id) { return document.getElementById(id); }

  function legend(box, items) {
    clear(box);
    items.forEach(function (it) {
      var s = el('span', 'item');
      var sw = el('span', 'sw' + (it.kind ? ' ' + it.kind : ''));
      if (it.kind === 'dash') sw.style.borderTopColor = it.color; else sw.style.background = it.color;
      s.appendChild(sw);
      s.appendChild(document.createTextNode(it.label));
      box.appendChild(s);
    });
  }

  /* Tooltip: rows of [swatch colour or null, key, value]. */
  function showTip(tip, wrap, evt, title, rows) {
    clear(tip);
    if (title) tip.appendChild(el('div', 'title', title));
    rows.forEach(function (r) {
      var row = el('div', 'row');
      var k = el('span', 'k');
      if (r[0]) { var sw = el('span', 'sw'); sw.style.background = r[0]; k.appendChild(sw); }
      k.appendChild(document.createTextNode(r[1]));
      row.appendChild(k);
      row.appendChild(el('span', 'v', r[2]));
      tip.appendChild(row);
    });
    tip.style.display = 'block';
    var box = wrap.getBoundingClientRect();
    var x = evt.clientX - box.left + 14, y = evt.clientY - box.top + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > wrap.clientWidth) x = Math.max(0, evt.clientX - box.left - w - 14);
    if (window.getComputedStyle(wrap).overflowY === 'visible') {
      /* A chart that does not scroll (the time charts, the timeline's canvas):
       * the tip sits just below it, under the
       * pointer, so it never covers the lines being read. */
      y = wrap.clientHeight + 4;
      tip.classList.add('below');
    } else {
      if (y + h > wrap.clientHeight + wrap.scrollTop && y > h + 20) y = evt.clientY - box.top - h - 10;
      y += wrap.scrollTop;
      tip.classList.remove('below');
    }
    tip.style.left = Math.max(0, Math.min(x, wrap.clientWidth - w)) + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip(tip) { tip.style.display = 'none'; }

  /* ---- scales and ticks ------------------------------------------------ */

  function niceStep(span, count) {
    var raw = span / Math.max(1, count), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * mag;
  }
  function ticks(lo, hi, count) {
    if (!(hi > lo)) return [lo];
    var step = niceStep(hi - lo, count), out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
    return out;
  }
  function decimalsFor(step) {
    for (var d = 0; d < 6; d++) {
      var v = step * Math.pow(10, d);
      if (Math.abs(v - Math.round(v)) < 1e-6 * Math.max(1, v)) return d;
    }
    return 6;
  }
  /* Byte axis: ticks at nice values of one binary unit, labelled with it. */
  function byteTicks(max, count) {
    var i = 0, u = 1;
    while (max / u >= 1024 && i < BYTE_UNITS.length - 1) { u *= 1024; i++; }
    var t = ticks(0, max / u, count), d = decimalsFor(t.length > 1 ? t[1] - t[0] : 1);
    return t.map(function (v) { return { v: v * u, label: v.toFixed(d) + ' ' + BYTE_UNITS[i] }; });
  }
  function pctTicks(max, count) {
    var t = ticks(0, max * 100, count), d = decimalsFor(t.length > 1 ? t[1] - t[0] : 1);
    return t.map(function (v) { return { v: v / 100, label: v.toFixed(d) + ' %' }; });
  }
  function xTicks(lo, hi, mode, count) {
    if (mode === 'seq') {
      return ticks(lo, hi, count).map(function (v) { return { v: v, label: fmtCount(Math.round(v)) }; });
    }
    var u = timeUnit(Math.max(Math.abs(lo), Math.abs(hi), 1));
    var t = ticks(lo / u[0], hi / u[0], count), d = decimalsFor(t.length > 1 ? t[1] - t[0] : 1);
    return t.map(function (v) { return { v: v * u[0], label: v.toFixed(d) + ' ' + u[1] }; });
  }
  /* First index i with a[i] >= v (a sorted). */
  function lowerBound(a, v) {
    var lo = 0, hi = a.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; }
    return lo;
  }

  /* ---- the shared x range ---------------------------------------------- */

  var TL = D.timeline || {};
  var N = (TL.t || []).length;
  /* Time on the x axis when the samples carry a usable clock, else the event sequence. */
  var XMODE = (function () {
    if (!N) return 'time';
    for (var i = 1; i < N; i++) if (TL.t[i] < TL.t[i - 1]) return 'seq';
    return TL.t[N - 1] > TL.t[0] ? 'time' : 'seq';
  })();
  var XS = XMODE === 'time' ? (TL.t || []) : (TL.seq || []);
  var fmtX = XMODE === 'time' ? fmtTime : function (v) { return 'event ' + fmtCount(Math.round(v)); };
  function itemX(o) { return XMODE === 'time' ? o.t : o.seq; }

  /* The run ends with the last bucket's last event, or later with an OOM or marker. */
  var XEND = (function () {
    var end = N ? Math.max(XS[N - 1], (XMODE === 'time' ? TL.t_end : TL.seq_end) || 0) : 1;
    (D.ooms || []).concat(D.markers || []).forEach(function (o) {
      var x = XMODE === 'time' ? o.t : o.seq;
      if (typeof x === 'number' && x > end) end = x;
    });
    return end;
  })();

  var view = {
    full0: N ? XS[0] : 0, full1: XEND, x0: 0, x1: 1, subs: [],
    set: function (a, b) {
      var span = this.full1 - this.full0, min = Math.max(span / 1e6, XMODE === 'seq' ? 2 : 1);
      if (b - a < min) { var c = (a + b) / 2; a = c - min / 2; b = c + min / 2; }
      if (b - a > span) { a = this.full0; b = this.full1; }
      if (a < this.full0) { b += this.full0 - a; a = this.full0; }
      if (b > this.full1) { a -= b - this.full1; b = this.full1; }
      this.x0 = Math.max(a, this.full0); this.x1 = Math.min(b, this.full1);
      this.subs.forEach(function (f) { f(); });
    },
    reset: function () { this.set(this.full0, this.full1); }
  };
  if (view.full1 <= view.full0) view.full1 = view.full0 + 1;
  window.fscView = view; /* the shared x range, for the console and tests */
  view.x0 = view.full0; view.x1 = view.full1;

  var MARKERS = (D.markers || []).filter(function (m) { return itemX(m) !== null && itemX(m) !== undefined; });
  var OOMS = D.ooms || [];

  return {
    D: D, TAGS: TAGS, fmtBytes: fmtBytes, fmtPct: fmtPct, fmtCount: fmtCount, fmtTime: fmtTime,
    fmtAddr: fmtAddr, tagName: tagName, shortTag: shortTag, tagCell: tagCell, traceEntry: traceEntry, el: el, sv: sv,
    svText: svText, capture: capture, release: release, clear: clear, byId: byId, legend: legend,
    showTip: showTip, hideTip: hideTip, byteTicks: byteTicks, pctTicks: pctTicks, xTicks: xTicks,
    lowerBound: lowerBound, TL: TL, N: N, XMODE: XMODE, XS: XS, fmtX: fmtX, itemX: itemX,
    view: view, MARKERS: MARKERS, OOMS: OOMS, onWindow: onWindow
  };
})();
