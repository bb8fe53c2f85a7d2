/*
 * viewer_time.js — the memory and fragmentation charts over time (one chart type,
 * zooming and panning together) and the range brush under them.
 */
(function (fsc) {
  'use strict';
  var fmtBytes = fsc.fmtBytes, fmtPct = fsc.fmtPct, fmtCount = fsc.fmtCount, sv = fsc.sv,
    svText = fsc.svText, capture = fsc.capture, release = fsc.release, clear = fsc.clear,
    byId = fsc.byId, legend = fsc.legend, showTip = fsc.showTip, hideTip = fsc.hideTip,
    byteTicks = fsc.byteTicks, pctTicks = fsc.pctTicks, xTicks = fsc.xTicks,
    lowerBound = fsc.lowerBound, TL = fsc.TL, N = fsc.N, XMODE = fsc.XMODE, XS = fsc.XS,
    fmtX = fsc.fmtX, itemX = fsc.itemX, view = fsc.view, MARKERS = fsc.MARKERS, OOMS = fsc.OOMS;

  /* ---- time chart ------------------------------------------------------ */

  var M = { l: 78, r: 64, t: 22, b: 28 };

  /* A chart of series [{key, label, color, values, right, dash}] over the
   * shared x range; series with right set use the right axis, in ratios. */
  function TimeChart(svgId, tipId, series) {
    this.svg = byId(svgId);
    this.tip = byId(tipId);
    this.wrap = this.svg.parentNode;
    this.series = series.filter(function (s) { return s.values && s.values.length === N; });
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
    var svg = this.svg, g = this.geometry();
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
  };

  TimeChart.prototype.drawMarkers = function (plot, svg, x2px, g) {
    var inView = MARKERS.filter(function (m) { var x = itemX(m); return x >= view.x0 && x <= view.x1; });
    var stride = Math.max(1, Math.ceil(inView.length / 150)), lastLabel = -1e9;
    var mg = sv('g', { 'class': 'markers' }, plot);
    for (var i = 0; i < inView.length; i += stride) {
      var x = x2px(itemX(inView[i])), gm = sv('g', { 'class': 'marker' }, mg);
      sv('line', { x1: x, x2: x, y1: M.t, y2: M.t + g.ph }, gm);
      if (x - lastLabel > 70) {
        /* near the right edge the label goes to the left of its line */
        var right = x > M.l + g.pw - 80;
        svText(gm, right ? x - 3 : x + 3, M.t + 10, inView[i].text.length > 14 ? inView[i].text.slice(0, 13) + '\u2026' : inView[i].text,
          right ? { 'text-anchor': 'end' } : undefined);
        lastLabel = x;
      }
    }
    OOMS.forEach(function (o, k) {
      var ox = itemX(o);
      if (ox === null || ox === undefined || ox < view.x0 || ox > view.x1) return;
      var x = x2px(ox), go = sv('g', { 'class': 'oom-line' }, svg);
      sv('line', { x1: x, x2: x, y1: M.t - 4, y2: M.t + g.ph }, go);
      svText(go, x + 3, M.t - 8, 'OOM #' + o.id);
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
    var clickTimer = null;
    svg.addEventListener('pointerup', function (evt) {
      var d = drag;
      drag = null;
      release(svg, evt);
      /* A click that is not a drag (nor half of a double-click) opens the
       * allocator state at that moment (the bucket's first event). */
      if (!d || !fsc.openState || Math.abs(dataX(evt).px - d.x) > 3) return;
      var x = dataX(evt).x;
      if (clickTimer) { clearTimeout(clickTimer); clickTimer = null; return; }
      clickTimer = setTimeout(function () {
        clickTimer = null;
        var i = fsc.lowerBound(XS, x + 1e-9) - 1;
        fsc.openState(i >= 0 ? TL.seq[i] : 0);
      }, 300);
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
    /* The keyboard does what the mouse does, for a focused chart. */
    svg.setAttribute('tabindex', '0');
    svg.addEventListener('keydown', function (evt) {
      var span = view.x1 - view.x0, mid = (view.x0 + view.x1) / 2, k = evt.key;
      if (k === 'ArrowLeft' || k === 'ArrowRight') {
        var d = (k === 'ArrowLeft' ? -0.1 : 0.1) * span;
        view.set(view.x0 + d, view.x1 + d);
      } else if (k === '+' || k === '=' || k === '-') {
        var f = k === '-' ? 1.25 : 0.8;
        view.set(mid - span * f / 2, mid + span * f / 2);
      } else if (k === '0' || k === 'Home') {
        view.reset();
      } else {
        return;
      }
      evt.preventDefault();
    });
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
      if (Math.abs(this.scale.x2px(itemX(o)) - p.px) < 5) rows.push(['#dc2626', 'OOM #' + o.id, fmtBytes(o.requested_bytes) + ' requested']);
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
    /* Okabe-Ito colours, told apart with every common colour-vision deficiency. */
    var mem = [
      seriesDef('reserved', 'reserved', '#CC79A7'),
      seriesDef('allocated', 'allocated', '#0072B2'),
      seriesDef('requested', 'requested', '#009E73', false, '5 3')
    ];
    /* Reserved per private pool (CUDA graph pools, MemPools), the most in each bucket. */
    var POOL_COLORS = ['#D55E00', '#E69F00', '#56B4E9', '#000000', '#F0E442', '#999999', '#882255', '#44AA99'];
    (TL.pools || []).forEach(function (p, k) {
      TL['pool_res_' + k] = p.reserved;
      mem.push(seriesDef('pool_res_' + k, 'reserved in private pool (' + p.a + ', ' + p.b + ')', POOL_COLORS[k % POOL_COLORS.length], false, '2 2'));
    });
    var pn = byId('pool-note');
    if (pn && (TL.pools || []).length) {
      pn.textContent = 'Dotted: what each private pool (a CUDA graph pool or a MemPool) reserved, the most in each bucket' +
        (TL.pools_dropped ? '; the ' + TL.pools.length + ' pools that reserved the most are drawn, ' + TL.pools_dropped + ' others are not' : '') +
        '. For an imported snapshot a segment freed before the snapshot was taken counts as the default pool\u2019s (the snapshot does not say its pool), so a pool\u2019s line is what it is known to have reserved.';
      pn.classList.remove('hidden');
    }
    /* External fragmentation: the maximum of each bucket where the database
     * has it (timeline_external), else the value at the end of the bucket. */
    var hasMax = (TL.external_max || []).some(function (v) { return v !== null; });
    if (hasMax) TL.external_max = TL.external_max.map(function (v, i) { return v === null ? TL.external[i] : v; });
    var frag = [
      seriesDef('rbu', 'reserved but unallocated (maximum)', '#555555'),
      seriesDef('internal', 'internal fragmentation', '#E69F00'),
      hasMax ? seriesDef('external_max', 'free-space scatter, maximum in each bucket (right axis)', '#56B4E9', true)
        : seriesDef('external', 'free-space scatter (right axis)', '#56B4E9', true)
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
    fsc.onWindow('resize', function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () { pending = false; view.set(view.x0, view.x1); });
    });
    view.set(view.x0, view.x1);
  }

  fsc.renderTimeViews = renderTimeViews;
})(window.fsc);
