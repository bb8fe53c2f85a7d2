/*
 * fragscope report — draws the charts and tables from the JSON block #data.
 * No library: small SVG drawing helpers, one time-chart type shared by the
 * memory and fragmentation views (they zoom together), the segment map, and
 * plain tables. Every string from the trace goes in through textContent or
 * an attribute value, never through markup.
 */
(function () {
  'use strict';

  var SVGNS = document.getElementById('svg-ns').namespaceURI;
  var D = JSON.parse(document.getElementById('data').textContent);
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
    var name = tagName(t);
    max = max || 90;
    return name.length > max ? '\u2026' + name.slice(name.length - max + 1) : name;
  }
  function tagCell(t) { return { cls: 'tag', text: shortTag(t), title: tagName(t) }; }

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
    if (y + h > wrap.clientHeight + wrap.scrollTop && y > h + 20) y = evt.clientY - box.top - h - 10;
    tip.style.left = x + 'px';
    tip.style.top = (y + wrap.scrollTop) + 'px';
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

  /* ---- time chart ------------------------------------------------------ */

  var M = { l: 78, r: 64, t: 22, b: 28 };

  /* series: [{key, label, color, values, right (bool), dash}] ; right axis in ratio units. */
  function TimeChart(svgId, tipId, series, opts) {
    this.svg = byId(svgId);
    this.tip = byId(tipId);
    this.wrap = this.svg.parentNode;
    this.series = series.filter(function (s) { return s.values && s.values.length === N; });
    this.opts = opts || {};
    var self = this;
    view.subs.push(function () { self.render(); });
    this.bind();
  }

  /* Visible samples of one series as [x, y] pairs, reduced to min/max per
   * pixel column when there are more samples than pixels, so no spike is lost. */
  function visible(values, i0, i1, px, x2px) {
    var pts = [];
    if (i1 - i0 <= 2 * px) {
      for (var i = i0; i <= i1; i++) pts.push([XS[i], values[i]]);
      return pts;
    }
    var col = -1, lo = 0, hi = 0, ilo = 0, ihi = 0;
    function flush() {
      if (col < 0) return;
      if (ilo <= ihi) { pts.push([XS[ilo], lo]); if (ihi !== ilo) pts.push([XS[ihi], hi]); }
      else { pts.push([XS[ihi], hi]); pts.push([XS[ilo], lo]); }
    }
    for (var j = i0; j <= i1; j++) {
      var c = Math.floor(x2px(XS[j])), v = values[j];
      if (c !== col) { flush(); col = c; lo = hi = v; ilo = ihi = j; continue; }
      if (v < lo) { lo = v; ilo = j; }
      if (v > hi) { hi = v; ihi = j; }
    }
    flush();
    return pts;
  }

  TimeChart.prototype.geometry = function () {
    var r = this.svg.getBoundingClientRect();
    var w = Math.max(320, Math.round(r.width) || 1000), h = Math.round(r.height) || 320;
    return { w: w, h: h, pw: w - M.l - M.r, ph: h - M.t - M.b };
  };

  TimeChart.prototype.render = function () {
    var svg = this.svg, g = this.geometry(), self = this;
    clear(svg);
    svg.setAttribute('viewBox', '0 0 ' + g.w + ' ' + g.h);
    if (!N) { svText(svg, g.w / 2, g.h / 2, 'No timeline samples in this database', { 'text-anchor': 'middle' }); return; }
    var x0 = view.x0, x1 = view.x1;
    var i0 = Math.max(0, lowerBound(XS, x0) - 1), i1 = Math.min(N - 1, lowerBound(XS, x1));
    var x2px = function (x) { return M.l + (x - x0) / (x1 - x0) * g.pw; };
    var left = this.series.filter(function (s) { return !s.right; });
    var right = this.series.filter(function (s) { return s.right; });
    function maxOf(list) {
      var m = 0;
      list.forEach(function (s) { for (var i = i0; i <= i1; i++) if (s.values[i] > m) m = s.values[i]; });
      return m;
    }
    var lmax = maxOf(left) * 1.06 || 1, rmax = Math.min(1, maxOf(right) * 1.1) || 1;
    var yL = function (v) { return M.t + g.ph - v / lmax * g.ph; };
    var yR = function (v) { return M.t + g.ph - v / rmax * g.ph; };
    this.scale = { x2px: x2px, yL: yL, yR: yR, g: g };

    var grid = sv('g', { 'class': 'grid' }, svg), axis = sv('g', { 'class': 'axis' }, svg);
    byteTicks(lmax, 6).forEach(function (t) {
      if (t.v > lmax) return;
      var y = yL(t.v);
      sv('line', { x1: M.l, x2: M.l + g.pw, y1: y, y2: y }, grid);
      svText(axis, M.l - 6, y + 4, t.label, { 'text-anchor': 'end' });
    });
    if (right.length) {
      pctTicks(rmax, 5).forEach(function (t) {
        if (t.v > rmax) return;
        svText(axis, M.l + g.pw + 6, yR(t.v) + 4, t.label, { 'text-anchor': 'start' });
      });
    }
    xTicks(x0, x1, XMODE, Math.max(3, Math.floor(g.pw / 110))).forEach(function (t) {
      var x = x2px(t.v);
      if (x < M.l - 0.5 || x > M.l + g.pw + 0.5) return;
      sv('line', { x1: x, x2: x, y1: M.t, y2: M.t + g.ph }, grid);
      svText(axis, x, M.t + g.ph + 16, t.label, { 'text-anchor': 'middle' });
    });
    sv('line', { x1: M.l, x2: M.l + g.pw, y1: M.t + g.ph, y2: M.t + g.ph }, axis);
    sv('line', { x1: M.l, x2: M.l, y1: M.t, y2: M.t + g.ph }, axis);

    var clipId = svg.id + '-clip';
    var defs = sv('defs', {}, svg), cp = sv('clipPath', { id: clipId }, defs);
    sv('rect', { x: M.l, y: M.t - 1, width: g.pw, height: g.ph + 2 }, cp);
    var plot = sv('g', { 'clip-path': 'url(#' + clipId + ')' }, svg);

    this.drawMarkers(plot, svg, x2px, g);
    this.series.forEach(function (s) {
      var y = s.right ? yR : yL, pts = visible(s.values, i0, i1, g.pw, x2px), d = '';
      for (var k = 0; k < pts.length; k++) {
        var px = x2px(pts[k][0]).toFixed(1), py = y(pts[k][1]).toFixed(1);
        /* Step after: a sample's value holds until the next sample. */
        d += k === 0 ? 'M' + px + ' ' + py : 'H' + px + 'V' + py;
      }
      if (pts.length) d += 'H' + (M.l + g.pw).toFixed(1);
      var p = sv('path', { 'class': 'series', d: d, stroke: s.color, 'data-series': s.key }, plot);
      if (s.dash) p.setAttribute('stroke-dasharray', s.dash);
    });
    /* Where the plot area is, for tests and anyone scripting the page. */
    svg.setAttribute('data-plot', M.l + ' ' + g.pw);
    this.cross = sv('line', { 'class': 'cross', x1: 0, x2: 0, y1: M.t, y2: M.t + g.ph, visibility: 'hidden' }, svg);
    this.overlay = sv('rect', { x: M.l, y: M.t, width: g.pw, height: g.ph, fill: 'transparent' }, svg);
    if (this.opts.onRender) this.opts.onRender();
    self.hoverIndex = -1;
  };

  TimeChart.prototype.drawMarkers = function (plot, svg, x2px, g) {
    var inView = MARKERS.filter(function (m) { var x = itemX(m); return x >= view.x0 && x <= view.x1; });
    var stride = Math.max(1, Math.ceil(inView.length / 150)), lastLabel = -1e9;
    var mg = sv('g', { 'class': 'markers' }, plot);
    for (var i = 0; i < inView.length; i += stride) {
      var x = x2px(itemX(inView[i])), gm = sv('g', { 'class': 'marker' }, mg);
      sv('line', { x1: x, x2: x, y1: M.t, y2: M.t + g.ph }, gm);
      if (x - lastLabel > 70 && x < M.l + g.pw - 30) {
        svText(gm, x + 3, M.t + 10, inView[i].text.length > 14 ? inView[i].text.slice(0, 13) + '\u2026' : inView[i].text);
        lastLabel = x;
      }
    }
    OOMS.forEach(function (o, k) {
      var ox = itemX(o);
      if (ox === null || ox === undefined || ox < view.x0 || ox > view.x1) return;
      var x = x2px(ox), go = sv('g', { 'class': 'oom-line' }, svg);
      sv('line', { x1: x, x2: x, y1: M.t - 4, y2: M.t + g.ph }, go);
      svText(go, x + 3, M.t - 8, 'OOM #' + (k + 1));
    });
  };

  TimeChart.prototype.bind = function () {
    var self = this, svg = this.svg, drag = null;
    function dataX(evt) {
      var r = svg.getBoundingClientRect(), g = self.scale.g;
      var px = (evt.clientX - r.left) * g.w / r.width;
      return { px: px, x: view.x0 + (px - M.l) / g.pw * (view.x1 - view.x0) };
    }
    svg.addEventListener('wheel', function (evt) {
      if (!N || !self.scale) return;
      evt.preventDefault();
      var p = dataX(evt), f = evt.deltaY < 0 ? 0.8 : 1.25;
      view.set(p.x - (p.x - view.x0) * f, p.x + (view.x1 - p.x) * f);
    }, { passive: false });
    svg.addEventListener('pointerdown', function (evt) {
      if (!N || !self.scale) return;
      drag = { x: dataX(evt).px, a: view.x0, b: view.x1 };
      capture(svg, evt);
    });
    svg.addEventListener('pointerup', function (evt) {
      drag = null;
      release(svg, evt);
    });
    svg.addEventListener('pointermove', function (evt) {
      if (!N || !self.scale) return;
      if (drag) {
        var dpx = dataX(evt).px - drag.x, dx = dpx / self.scale.g.pw * (drag.b - drag.a);
        view.set(drag.a - dx, drag.b - dx);
        hideTip(self.tip);
        return;
      }
      self.hover(evt, dataX(evt));
    });
    svg.addEventListener('pointerleave', function () {
      hideTip(self.tip);
      if (self.cross) self.cross.setAttribute('visibility', 'hidden');
    });
    svg.addEventListener('dblclick', function () { view.reset(); });
  };

  TimeChart.prototype.hover = function (evt, p) {
    var g = this.scale.g;
    if (p.px < M.l || p.px > M.l + g.pw) { hideTip(this.tip); this.cross.setAttribute('visibility', 'hidden'); return; }
    /* The sample in force at x: the last one at or before it (step after). */
    var i = lowerBound(XS, p.x);
    if (i >= N || XS[i] > p.x) i -= 1;
    i = Math.max(0, i);
    var x = this.scale.x2px(XS[i]);
    this.cross.setAttribute('x1', x); this.cross.setAttribute('x2', x);
    this.cross.setAttribute('visibility', 'visible');
    var rows = this.series.map(function (s) {
      return [s.color, s.label, s.right ? fmtPct(s.values[i]) : fmtBytes(s.values[i])];
    });
    if (XMODE === 'time' && TL.seq) rows.push([null, 'event', fmtCount(TL.seq[i])]);
    var near = null, best = 5;
    MARKERS.forEach(function (m) {
      var d = Math.abs(this.scale.x2px(itemX(m)) - p.px);
      if (d < best) { best = d; near = m; }
    }, this);
    if (near) rows.push([null, 'marker', near.text]);
    OOMS.forEach(function (o, k) {
      if (Math.abs(this.scale.x2px(itemX(o)) - p.px) < 5) rows.push(['#dc2626', 'OOM #' + (k + 1), fmtBytes(o.requested) + ' requested']);
    }, this);
    showTip(this.tip, this.wrap, evt, fmtX(XS[i]), rows);
  };

  /* ---- overview strip (range brush) ------------------------------------ */

  function Brush(svgId, series) {
    var svg = byId(svgId), state = null;
    function geo() {
      var r = svg.getBoundingClientRect();
      var w = Math.max(320, Math.round(r.width) || 1000), h = Math.round(r.height) || 56;
      return { w: w, h: h, pw: w - M.l - M.r, ph: h - 8 };
    }
    function x2px(x, g) { return M.l + (x - view.full0) / (view.full1 - view.full0) * g.pw; }
    function px2x(px, g) { return view.full0 + (px - M.l) / g.pw * (view.full1 - view.full0); }
    var win = null;
    function render() {
      clear(svg);
      var g = geo();
      svg.setAttribute('viewBox', '0 0 ' + g.w + ' ' + g.h);
      if (!N) return;
      var max = 1;
      series.forEach(function (s) { s.values.forEach(function (v) { if (v > max) max = v; }); });
      sv('rect', { x: M.l, y: 2, width: g.pw, height: g.ph, fill: '#f8fafc', stroke: '#d9e2ec' }, svg);
      series.forEach(function (s) {
        var pts = visible(s.values, 0, N - 1, g.pw, function (x) { return x2px(x, g); }), d = '';
        pts.forEach(function (p, k) {
          var px = x2px(p[0], g).toFixed(1), py = (2 + g.ph - p[1] / max * (g.ph - 4)).toFixed(1);
          d += k === 0 ? 'M' + px + ' ' + py : 'H' + px + 'V' + py;
        });
        sv('path', { 'class': 'overview-series', d: d, stroke: s.color }, svg);
      });
      svg.setAttribute('data-plot', M.l + ' ' + g.pw);
      var a = x2px(view.x0, g), b = x2px(view.x1, g);
      win = sv('rect', { 'class': 'brush-window', x: a, y: 2, width: Math.max(2, b - a), height: g.ph }, svg);
      var zr = byId('zoom-range');
      if (zr) zr.textContent = 'showing ' + fmtX(view.x0) + ' \u2013 ' + fmtX(view.x1);
    }
    function pxOf(evt, g) {
      var r = svg.getBoundingClientRect();
      return (evt.clientX - r.left) * g.w / r.width;
    }
    svg.addEventListener('pointerdown', function (evt) {
      if (!N) return;
      var g = geo(), px = pxOf(evt, g);
      if (evt.target === win) state = { mode: 'move', px: px, a: view.x0, b: view.x1 };
      else state = { mode: 'select', px: px };
      capture(svg, evt);
    });
    svg.addEventListener('pointermove', function (evt) {
      if (!state) return;
      var g = geo(), px = pxOf(evt, g);
      if (state.mode === 'move') {
        var dx = (px - state.px) / g.pw * (view.full1 - view.full0);
        view.set(state.a + dx, state.b + dx);
      } else if (Math.abs(px - state.px) > 2) {
        view.set(px2x(Math.min(px, state.px), g), px2x(Math.max(px, state.px), g));
      }
    });
    svg.addEventListener('pointerup', function (evt) {
      state = null;
      release(svg, evt);
    });
    svg.addEventListener('dblclick', function () { view.reset(); });
    view.subs.push(render);
  }

  /* ---- memory and fragmentation views ---------------------------------- */

  function seriesDef(key, label, color, right, dash) {
    return { key: key, label: label, color: color, values: TL[key], right: !!right, dash: dash };
  }

  function renderTimeViews() {
    var mem = [
      seriesDef('reserved', 'reserved', '#9333ea'),
      seriesDef('allocated', 'allocated', '#2563eb'),
      seriesDef('requested', 'requested', '#16a34a', false, '5 3')
    ];
    var frag = [
      seriesDef('rbu', 'reserved but unallocated', '#64748b'),
      seriesDef('internal', 'internal fragmentation', '#ea580c'),
      seriesDef('external', 'external fragmentation (right axis)', '#0d9488', true)
    ];
    function legendItems(list) {
      var items = list.filter(function (s) { return s.values && s.values.length === N; })
        .map(function (s) { return { label: s.label, color: s.color, kind: s.dash ? 'dash' : 'line' }; });
      if (MARKERS.length) items.push({ label: 'marker (' + fmtCount(MARKERS.length) + ')', color: '#7b8794', kind: 'dash' });
      if (OOMS.length) items.push({ label: 'out of memory', color: '#dc2626', kind: 'line' });
      return items;
    }
    legend(byId('legend-memory'), legendItems(mem));
    legend(byId('legend-frag'), legendItems(frag));
    new TimeChart('chart-memory', 'tip-memory', mem);
    new TimeChart('chart-frag', 'tip-frag', frag);
    new Brush('chart-brush', mem.filter(function (s) { return s.values && s.values.length === N && s.key !== 'requested'; }));
    byId('zoom-reset').addEventListener('click', function () { view.reset(); });
    var pending = false;
    window.addEventListener('resize', function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; view.set(view.x0, view.x1); });
    });
    view.set(view.x0, view.x1);
  }

  /* ---- segment map ----------------------------------------------------- */

  var STATE_NAMES = ['free', 'allocated', 'pending free'];
  var STATE_COLORS = ['#eef1f5', '#2563eb', '#f59e0b'];
  var PALETTE = ['#2563eb', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#db2777', '#65a30d',
    '#ca8a04', '#4f46e5', '#0d9488', '#b91c1c', '#7c3aed'];
  var OTHER_TAG = '#94a3b8';

  /* Block rows: [offset, size, requested, state, tag, age_events, age_ns, count]. */
  function SegmentMap() {
    var layouts = D.layouts || [];
    var select = byId('seg-layout'), svg = byId('segmap'), tip = byId('tip-seg'), wrap = svg.parentNode;
    var colourBy = 'state', current = 0, self = this;
    layouts.forEach(function (l, i) {
      var o = el('option', null, l.name);
      o.value = String(i);
      select.appendChild(o);
    });
    select.addEventListener('change', function () { current = Number(select.value); render(); });
    document.querySelectorAll('input[name="seg-colour"]').forEach(function (r) {
      r.addEventListener('change', function () { if (r.checked) { colourBy = r.value; render(); } });
    });
    this.show = function (i) { current = i; select.value = String(i); render(); };

    function tagColours(l) {
      var bytes = {};
      l.segments.forEach(function (s) {
        s.blocks.forEach(function (b) { if (b[3] !== 0) bytes[b[4]] = (bytes[b[4]] || 0) + b[1]; });
      });
      var order = Object.keys(bytes).sort(function (a, b) { return bytes[b] - bytes[a]; });
      var map = {};
      order.slice(0, PALETTE.length).forEach(function (t, i) { map[t] = PALETTE[i]; });
      return { map: map, order: order, bytes: bytes };
    }

    function render() {
      clear(svg);
      hideTip(tip);
      var l = layouts[current];
      var sum = byId('seg-summary');
      if (!l) {
        sum.textContent = 'No block layout in this database.';
        svg.setAttribute('viewBox', '0 0 100 10');
        svg.setAttribute('height', '10');
        return;
      }
      var total = 0, alloc = 0, free = 0, nfree = 0, largest = 0;
      l.segments.forEach(function (s) {
        total += s.size;
        s.blocks.forEach(function (b) {
          if (b[3] === 0) { free += b[1]; nfree += b[7] || 1; if ((b[7] || 1) === 1 && b[1] > largest) largest = b[1]; }
          else alloc += b[1];
        });
      });
      var text = fmtCount(l.segments.length) + ' segments shown, ' + fmtBytes(total) + ' reserved, ' +
        fmtBytes(alloc) + ' in blocks, ' + fmtBytes(free) + ' free in ' + fmtCount(nfree) +
        ' free blocks (largest ' + fmtBytes(largest) + ')';
      if (l.t !== undefined && l.t !== null) text += ' \u2014 at ' + (XMODE === 'time' ? fmtTime(l.t) : 'event ' + fmtCount(l.seq));
      if (l.segments_dropped) text += '. ' + fmtCount(l.segments_dropped) + ' smaller segments (' + fmtBytes(l.bytes_dropped) + ') not shown';
      if (l.truncated) text += '. The layouts were too large to read whole (over a million blocks): part of this one is missing';
      if (l.blocks_merged) text += '. Neighbouring blocks of the same state and tag were merged into runs to keep the file small';
      sum.textContent = text + '.';

      var tc = tagColours(l);
      if (colourBy === 'state') {
        legend(byId('legend-seg'), [0, 1, 2].map(function (s) { return { label: STATE_NAMES[s], color: STATE_COLORS[s] }; }));
      } else {
        var items = tc.order.slice(0, PALETTE.length).map(function (t) {
          var name = tagName(Number(t));
          return { label: (name.length > 48 ? '\u2026' + name.slice(-47) : name) + ' (' + fmtBytes(tc.bytes[t]) + ')', color: tc.map[t] };
        });
        if (tc.order.length > PALETTE.length) items.push({ label: 'other tags', color: OTHER_TAG });
        items.push({ label: 'free', color: STATE_COLORS[0] });
        legend(byId('legend-seg'), items);
      }

      var W = Math.max(600, wrap.clientWidth || 1200), LBL = 190, ROW = 18, GAP = 5, bw = W - LBL - 12;
      var H = l.segments.length * (ROW + GAP) + 8;
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
      svg.setAttribute('height', H);
      l.segments.forEach(function (s, i) {
        var y = 4 + i * (ROW + GAP), g = sv('g', { 'class': 'seg' }, svg);
        svText(g, 4, y + 13, fmtAddr(s.addr), { 'class': 'seglabel' });
        svText(g, LBL - 8, y + 13, fmtBytes(s.size), { 'class': 'seglabel', 'text-anchor': 'end' });
        var bar = sv('rect', { 'class': 'segbar', x: LBL, y: y, width: bw, height: ROW }, g);
        bar.__seg = s;
        if (!(s.size > 0)) return;
        s.blocks.forEach(function (b) {
          if (b[3] === 0) return; /* free space shows as the bar itself */
          var x = LBL + b[0] / s.size * bw, w = Math.max(0.6, b[1] / s.size * bw);
          var fill = colourBy === 'state' ? STATE_COLORS[b[3]] : (tc.map[b[4]] || OTHER_TAG);
          var r = sv('rect', { 'class': 'blk', x: x.toFixed(2), y: y + 1, width: w.toFixed(2), height: ROW - 2, fill: fill }, g);
          r.__blk = b; r.__seg = s;
        });
        s.blocks.forEach(function (b) {
          if (b[3] !== 0) return;
          /* Free blocks are invisible targets over the bar, so they can be hovered too. */
          var r = sv('rect', { 'class': 'blk free', x: (LBL + b[0] / s.size * bw).toFixed(2), y: y + 1,
            width: Math.max(0.6, b[1] / s.size * bw).toFixed(2), height: ROW - 2, fill: 'transparent' }, g);
          r.__blk = b; r.__seg = s;
        });
      });
    }

    svg.addEventListener('pointermove', function (evt) {
      var t = evt.target, s = t.__seg;
      if (!s) { hideTip(tip); return; }
      var b = t.__blk, rows = [];
      if (!b) {
        rows.push([null, 'segment', fmtBytes(s.size)]);
        rows.push([null, 'pool', s.pool === 0 ? 'small' : 'large']);
        showTip(tip, wrap, evt, 'segment ' + fmtAddr(s.addr), rows);
        return;
      }
      var count = b[7] || 1;
      rows.push([STATE_COLORS[b[3]], 'state', STATE_NAMES[b[3]] + (count > 1 ? ' (' + fmtCount(count) + ' blocks)' : '')]);
      rows.push([null, 'size', fmtBytes(b[1])]);
      if (b[3] !== 0) {
        rows.push([null, 'requested', fmtBytes(b[2])]);
        rows.push([null, 'internal waste', fmtBytes(b[1] - b[2])]);
        rows.push([null, 'tag', tagName(b[4])]);
        if (b[5] !== null && b[5] !== undefined) rows.push([null, 'age', fmtCount(b[5]) + ' events' + (b[6] ? ', ' + fmtTime(b[6]) : '')]);
      }
      rows.push([null, 'segment', fmtAddr(s.addr) + ' (' + fmtBytes(s.size) + ')']);
      showTip(tip, wrap, evt, 'block ' + fmtAddr(s.addr + b[0]), rows);
    });
    svg.addEventListener('pointerleave', function () { hideTip(tip); });
    window.addEventListener('resize', function () { render(); });
    render();
    return self;
  }

  /* ---- tables ---------------------------------------------------------- */

  function bar(frac, cls) {
    var b = el('span', 'bar' + (cls ? ' ' + cls : '')), f = el('span');
    f.style.width = (Math.max(0, Math.min(1, frac || 0)) * 100).toFixed(1) + '%';
    b.appendChild(f);
    return b;
  }
  function table(tbl, head, rows) {
    clear(tbl);
    var thead = el('thead'), tr = el('tr');
    head.forEach(function (h) { tr.appendChild(el('th', h[1] || null, h[0])); });
    thead.appendChild(tr);
    tbl.appendChild(thead);
    var tbody = el('tbody');
    rows.forEach(function (cells) {
      var r = el('tr');
      cells.forEach(function (c) {
        var td = el('td', c.cls || null);
        (c.nodes || []).forEach(function (n) { td.appendChild(n); });
        if (c.text !== undefined) td.appendChild(document.createTextNode(c.text));
        if (c.title) td.title = c.title;
        r.appendChild(td);
      });
      tbody.appendChild(r);
    });
    tbl.appendChild(tbody);
  }
  function emptyNote(tbl, text) {
    clear(tbl);
    var tb = el('tbody'), tr = el('tr'), td = el('td', 'l empty', text);
    tr.appendChild(td); tb.appendChild(tr); tbl.appendChild(tb);
  }

  function renderBins() {
    var bins = D.bins || [], tbl = byId('bins-table');
    if (!bins.length) { emptyNote(tbl, 'No bin statistics in this database.'); return; }
    table(tbl, [['size class', 'l'], ['requests'], ['hit rate', 'l'], ['requested'], ['allocated'],
      ['use', 'l'], ['internal waste'], ['peak live'], ['splits'], ['merges'], ['free at peak']],
    bins.map(function (b) {
      var hits = b.hits || 0, tot = hits + (b.misses || 0), use = b.allocated ? b.requested / b.allocated : null;
      return [
        { cls: 'l', text: fmtBytes(b.lo) + ' \u2013 ' + (b.hi ? fmtBytes(b.hi) : '\u221e') },
        { text: fmtCount(b.requests) },
        { cls: 'l', nodes: [bar(tot ? hits / tot : 0, 'good')], text: tot ? fmtPct(hits / tot) : '\u2014' },
        { text: fmtBytes(b.requested) },
        { text: fmtBytes(b.allocated) },
        { cls: 'l', nodes: [bar(use, use !== null && use < 0.8 ? 'warn' : '')], text: fmtPct(use) },
        { text: fmtBytes(b.waste) },
        { text: fmtCount(b.peak_blocks) + ' / ' + fmtBytes(b.peak_bytes) },
        { text: fmtCount(b.splits) },
        { text: fmtCount(b.merges) },
        { text: fmtBytes(b.free_at_peak) }
      ];
    }));
  }

  function tagTable(tbl, list, total, emptyText) {
    if (!list || !list.length) { emptyNote(tbl, emptyText); return; }
    var max = list.reduce(function (m, t) { return Math.max(m, t.bytes); }, 1);
    table(tbl, [['tag', 'l'], ['live bytes', 'l'], ['blocks'], ['share']], list.map(function (t) {
      return [
        tagCell(t.tag),
        { cls: 'l', nodes: [bar(t.bytes / max, 'tagbar')], text: fmtBytes(t.bytes) },
        { text: fmtCount(t.blocks) },
        { text: total ? fmtPct(t.bytes / total) : '\u2014' }
      ];
    }));
  }

  function renderTags() {
    var s = D.summary || {};
    tagTable(byId('tags-peak'), D.top_tags, s.peak_allocated_bytes, 'No per-tag figures at the peak.');
    tagTable(byId('tags-leaks'), D.leaks, null, 'Nothing was live at the end of the run.');
  }

  /* ---- OOM panel ------------------------------------------------------- */

  function kv(grid, k, v) {
    var d = el('div');
    d.appendChild(el('span', 'k', k + ': '));
    d.appendChild(el('span', 'v', v));
    grid.appendChild(d);
  }

  function renderOoms(segmap) {
    var box = byId('oom-list');
    clear(box);
    if (!OOMS.length) { box.appendChild(el('p', 'empty', 'No out-of-memory error in this run.')); return; }
    OOMS.forEach(function (o, k) {
      var card = el('div', 'oom-card'), h = el('h3');
      h.appendChild(document.createTextNode('OOM #' + (k + 1)));
      h.appendChild(el('span', 'cause ' + String(o.cause || '').replace(/[^a-z]/g, ''), o.cause || 'unknown'));
      h.appendChild(el('span', 'muted', 'at ' + (o.t !== null && o.t !== undefined && XMODE === 'time' ? fmtTime(o.t) : 'event ' + fmtCount(o.seq)) +
        (o.tag !== undefined && o.tag !== null ? ' \u00b7 ' + shortTag(o.tag, 120) : '')));
      card.appendChild(h);
      var grid = el('div', 'oom-grid');
      kv(grid, 'requested', fmtBytes(o.requested) + (o.rounded && o.rounded !== o.requested ? ' (rounded ' + fmtBytes(o.rounded) + ')' : ''));
      kv(grid, 'allocated', fmtBytes(o.allocated));
      kv(grid, 'reserved', fmtBytes(o.reserved));
      if (o.capacity_inferred) {
        kv(grid, 'capacity (inferred)', fmtBytes(o.capacity_lo) + ' \u2013 ' + fmtBytes(o.capacity_hi));
      } else {
        kv(grid, 'capacity', o.capacity ? fmtBytes(o.capacity) : 'unknown');
      }
      kv(grid, 'reserved but unallocated', fmtBytes(o.reserved - o.allocated));
      kv(grid, 'free inside segments', fmtBytes(o.free_reserved));
      kv(grid, 'largest free block', fmtBytes(o.largest_free));
      if (o.device_free !== null && o.device_free !== undefined) kv(grid, 'device free', fmtBytes(o.device_free));
      card.appendChild(grid);
      if (o.explanation) card.appendChild(el('p', 'explain', o.explanation));

      if (o.segments && o.segments.length) {
        card.appendChild(el('h4', null, 'Segments holding the most free space, and the live blocks pinning them'));
        var rows = [];
        o.segments.forEach(function (s) {
          rows.push([{ cls: 'l', text: fmtAddr(s.addr) }, { text: fmtBytes(s.size) }, { text: fmtBytes(s.free) },
            { text: fmtBytes(s.largest_free) }, { cls: 'l', text: '' }, { text: '' }, { cls: 'tag', text: fmtCount((s.pinning || []).length) + ' pinning blocks' }]);
          (s.pinning || []).forEach(function (p) {
            rows.push([{ cls: 'l', text: '' }, { text: '' }, { text: '' }, { text: '' },
              { cls: 'l', text: fmtAddr(p.addr) + ' \u00b7 ' + fmtBytes(p.size) },
              { text: (p.age_events !== null && p.age_events !== undefined ? fmtCount(p.age_events) + ' ev' : '') + (p.age_ns ? ' / ' + fmtTime(p.age_ns) : '') },
              tagCell(p.tag)]);
          });
        });
        var t1 = el('table', 'data');
        table(t1, [['segment', 'l'], ['size'], ['free'], ['largest free'], ['pinning block', 'l'], ['age'], ['tag', 'l']], rows);
        var w1 = el('div', 'table-wrap'); w1.appendChild(t1); card.appendChild(w1);
      }
      if (o.tags && o.tags.length) {
        card.appendChild(el('h4', null, 'Top tags by live bytes at the OOM'));
        var t2 = el('table', 'data');
        tagTable(t2, o.tags, o.allocated, '');
        var w2 = el('div', 'table-wrap'); w2.appendChild(t2); card.appendChild(w2);
      }
      card.appendChild(el('h4', null, 'What-if suggestions'));
      if (o.suggestions && o.suggestions.length) {
        var t3 = el('table', 'data');
        table(t3, [['configuration', 'l'], ['capacity needed'], ['avoids this OOM', 'l'], ['note', 'l']], o.suggestions.map(function (s) {
          return [{ cls: 'tag', text: s.config || '(defaults)' }, { text: s.needed_capacity ? fmtBytes(s.needed_capacity) : '\u2014' },
            { cls: 'l', text: s.avoids ? 'yes' : 'no' }, { cls: 'l', text: s.note || '' }];
        }));
        card.appendChild(t3);
      } else {
        card.appendChild(el('p', 'empty', 'No what-if results in this database (fragscope whatif fills them).'));
      }
      if (o.layout !== undefined && o.layout !== null && o.layout >= 0 && segmap) {
        var btn = el('button', null, 'Show the segment map at this OOM');
        btn.type = 'button';
        btn.addEventListener('click', function () { segmap.show(o.layout); byId('segments').scrollIntoView(); });
        card.appendChild(btn);
      }
      box.appendChild(card);
    });
  }

  /* ---- main ------------------------------------------------------------ */

  function guarded(name, fn) {
    try { return fn(); } catch (e) {
      window.fscNoteError(name + ': ' + (e && e.stack ? e.stack : String(e)));
      return null;
    }
  }
  guarded('time charts', renderTimeViews);
  var segmap = guarded('segment map', function () { return new SegmentMap(); });
  guarded('OOM panel', function () { renderOoms(segmap); });
  guarded('bins', renderBins);
  guarded('tags', renderTags);
  document.body.setAttribute('data-rendered', 'yes');
})();
