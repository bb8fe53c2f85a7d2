/*
 * viewer_state.js — the allocator state at any event (#state): the block
 * lifetimes of the data block's "state" member are decoded once; the
 * blocks and segments live after event N are those whose lifetimes cover
 * it. Events inside one of the carried windows are exact; any other event
 * is shown at the nearest carried event, and the page says so.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtCount = fsc.fmtCount, fmtAddr = fsc.fmtAddr,
    tagName = fsc.tagName, el = fsc.el, sv = fsc.sv, svText = fsc.svText, clear = fsc.clear,
    byId = fsc.byId, legend = fsc.legend, showTip = fsc.showTip, hideTip = fsc.hideTip;

  /* Okabe-Ito colours: told apart with every common colour-vision deficiency. */
  var STATE_COLORS = ['#ececec', '#0072B2', '#E69F00'];
  var STATE_NAMES = ['free', 'allocated', 'pending free'];

  /* ---- the model: decoded lifetimes ------------------------------------- */

  function StateModel(S) {
    var unit = S.unit || 1, B = S.blocks || {}, G = S.segs || {}, n = (B.a || []).length;
    this.events = S.events || 0;
    this.windows = S.windows || [];
    this.exactAll = !!S.exact_all;
    this.omitted = !!S.omitted;
    this.blocksTotal = S.blocks_total || 0;
    var a = new Float64Array(n), r = new Float64Array(n), c = new Float64Array(n), prev = 0;
    for (var i = 0; i < n; i++) {
      prev += B.a[i]; a[i] = prev;
      r[i] = B.r[i] < 0 ? -1 : prev + B.r[i];
      c[i] = B.c[i] < 0 ? -1 : prev + B.c[i];
    }
    this.n = n; this.a = a; this.r = r; this.c = c;
    this.seg = B.s || []; this.tag = B.g || []; this.waste = B.w || [];
    this.off = (B.o || []).map(function (v) { return v * unit; });
    this.size = (B.z || []).map(function (v) { return v * unit; });
    this.segs = { addr: G.addr || [], size: G.size || [], pool: G.pool || [], stream: G.stream || [],
      c: G.c || [], f: G.f || [], x: G.x || [] };
  }
  /* The carried event nearest to N (N itself when a window holds it). */
  StateModel.prototype.resolve = function (N) {
    var best = null, dist = Infinity;
    for (var i = 0; i < this.windows.length; i++) {
      var w = this.windows[i];
      if (N >= w[0] && N <= w[1]) return { event: N, exact: true, window: w };
      var e = N < w[0] ? w[0] : w[1], d = Math.abs(N - e);
      if (d < dist) { dist = d; best = { event: e, exact: false, window: w }; }
    }
    return best;
  };
  /* Blocks live right after event N: [index, state (1 allocated, 2 pending)]. */
  StateModel.prototype.blocksAt = function (N) {
    var out = [];
    for (var i = 0; i < this.n; i++) {
      if (this.a[i] > N) break;
      if (this.c[i] >= 0 && this.c[i] <= N) continue;
      out.push([i, this.r[i] >= 0 && this.r[i] <= N ? 2 : 1]);
    }
    return out;
  };
  StateModel.prototype.segsAt = function (N) {
    var s = this.segs, out = [];
    for (var i = 0; i < s.addr.length; i++)
      if (s.c[i] <= N && (s.f[i] < 0 || s.f[i] > N)) out.push(i);
    return out;
  };
  /* The segments at N with their blocks and the free gaps between them. */
  StateModel.prototype.layoutAt = function (N) {
    var self = this, segs = this.segsAt(N), bySeg = {};
    segs.forEach(function (i) { bySeg[i] = []; });
    var orphans = 0;
    this.blocksAt(N).forEach(function (p) {
      var s = self.seg[p[0]];
      if (bySeg[s]) bySeg[s].push(p); else orphans++;
    });
    var list = segs.map(function (i) {
      var blocks = bySeg[i].sort(function (x, y) { return self.off[x[0]] - self.off[y[0]]; });
      var out = [], pos = 0, size = self.segs.size[i];
      blocks.forEach(function (p) {
        var o = self.off[p[0]];
        if (o > pos) out.push({ state: 0, off: pos, size: o - pos });
        out.push({ state: p[1], off: o, size: self.size[p[0]], i: p[0] });
        pos = Math.max(pos, o + self.size[p[0]]);
      });
      if (size > pos) out.push({ state: 0, off: pos, size: size - pos });
      return { i: i, addr: self.segs.addr[i], size: size, pool: self.segs.pool[i],
        stream: self.segs.stream[i], expandable: !!self.segs.x[i], blocks: out };
    });
    list.sort(function (x, y) { return x.addr - y.addr; });
    return { segments: list, orphans: orphans };
  };

  /* ---- the view ---------------------------------------------------------- */

  function StateView() {
    var S = D.state, self = this;
    var svg = byId('statemap'), tip = byId('tip-state'), wrap = svg.parentNode;
    var range = byId('state-range'), field = byId('state-event'), note = byId('state-note');
    var sum = byId('state-summary');
    this.model = S ? new StateModel(S) : null;
    var M = this.model, current = 0, highlight = null, order = 'addr';
    this.current = function () { return current; };
    this.resolved = null;
    legend(byId('legend-state'), [0, 1, 2].map(function (s) { return { label: STATE_NAMES[s], color: STATE_COLORS[s] }; }));
    if (!M || M.omitted || !M.windows.length) {
      note.textContent = !M || !M.blocksTotal ? 'This database has no block lifetimes (table blocks), so the state at any event cannot be shown.'
        : 'The block lifetimes did not fit the page\u2019s size bound; see the segment map at the peak and OOMs below.';
      svg.setAttribute('viewBox', '0 0 100 10');
      svg.setAttribute('height', '10');
      this.show = function () { return null; };
      return;
    }
    range.max = String(Math.max(0, M.events - 1));
    field.max = String(Math.max(0, M.events - 1));
    byId('state-order').addEventListener('change', function () { order = this.value; render(); });
    range.addEventListener('input', function () { self.show(Number(range.value)); });
    /* The field takes an event number of this run and nothing else: text it
     * cannot show (letters, a fraction, out of range) is refused with a
     * word, and the state stays where it was. */
    function refuse(what) {
      field.setAttribute('aria-invalid', 'true');
      field.classList.add('invalid');
      note.textContent = what + ' is not an event of this run: type a whole number from 0 to ' + fmtCount(M.events - 1) +
        '. Still showing event ' + fmtCount(current) + '.';
      note.className = 'note refused';
      field.value = String(current);
    }
    field.addEventListener('change', function () {
      var raw = field.value, v = Number(raw);
      if (field.validity && field.validity.badInput) { refuse('That text'); return; }
      if (raw === '' || !/^\s*\d+\s*$/.test(raw)) { refuse(raw === '' ? 'An empty field' : '\u201c' + raw + '\u201d'); return; }
      if (v > M.events - 1) { refuse('Event ' + fmtCount(v)); return; }
      self.show(v);
    });
    byId('state-prev').addEventListener('click', function () { self.step(-1); });
    byId('state-next').addEventListener('click', function () { self.step(1); });
    /* Page Down is a hundred events forward and Page Up a hundred back
     * everywhere in the section, the slider included (a native slider would
     * move by a tenth of its range, Page Down backwards). */
    byId('state').addEventListener('keydown', function (e) {
      var k = e.key;
      if (e.target === field && k !== 'PageUp' && k !== 'PageDown') return;
      if (e.target === range && k !== 'PageUp' && k !== 'PageDown') return;
      var d = k === 'ArrowLeft' ? -1 : k === 'ArrowRight' ? 1 : k === 'PageUp' ? -100 :
        k === 'PageDown' ? 100 : 0;
      if (d) { self.step(d); e.preventDefault(); }
    }, true);

    /* Step by d events; stepping out of a window goes on to the next one. */
    this.step = function (d) {
      var want = Math.max(0, Math.min(M.events - 1, current + d)), r = M.resolve(want);
      if (!r.exact && d !== 0) {
        var ws = M.windows, next = null;
        for (var i = 0; i < ws.length; i++) {
          if (d > 0 && ws[i][0] > current) { next = ws[i][0]; break; }
          if (d < 0 && ws[i][1] < current) next = ws[i][1];
        }
        if (next !== null) want = next;
      }
      this.show(want);
    };

    this.show = function (N, hl) {
      N = Math.max(0, Math.min(M.events - 1, Math.round(Number(N) || 0)));
      highlight = hl === undefined ? null : hl;
      var r = M.resolve(N);
      current = r.event;
      self.resolved = r;
      range.value = String(current);
      field.value = String(current);
      field.removeAttribute('aria-invalid');
      field.classList.remove('invalid');
      if (r.exact) {
        note.textContent = M.exactAll ? 'Every event of this run is carried exactly.'
          : 'Event ' + fmtCount(N) + ' is inside a carried window (events ' + fmtCount(r.window[0]) + '\u2013' +
            fmtCount(r.window[1]) + '): exact.';
        note.className = 'muted';
      } else {
        note.textContent = 'Event ' + fmtCount(N) + ' is not carried by this page: showing event ' + fmtCount(r.event) +
          ', the nearest one it holds (' + fmtCount(Math.abs(N - r.event)) + ' events away). The page holds ' +
          M.windows.length + ' windows of about ' + fmtCount(r.window[1] - r.window[0] + 1) +
          ' events exactly, around the peak, each OOM and evenly over the run; analyze the database for any other event.';
        note.className = 'note';
      }
      render();
      if (fsc.onStateChange) fsc.onStateChange(current);
      return r;
    };

    function render() {
      clear(svg);
      hideTip(tip);
      var L = M.layoutAt(current);
      svg.setAttribute('data-event', String(current));
      svg.setAttribute('data-exact', self.resolved && self.resolved.exact ? 'yes' : 'no');
      var total = 0, alloc = 0, pend = 0, free = 0, largest = 0, nblk = 0, streams = {};
      L.segments.forEach(function (s) {
        total += s.size;
        streams[s.stream] = true;
        s.blocks.forEach(function (b) {
          if (b.state === 0) { free += b.size; if (b.size > largest) largest = b.size; }
          else { nblk++; if (b.state === 1) alloc += b.size; else pend += b.size; }
        });
      });
      var entry = fsc.traceEntry(current);
      svg.setAttribute('data-entry', entry);
      sum.textContent = 'After event ' + fmtCount(current) + (entry ? ' (' + entry + ')' : '') + ': ' + fmtCount(L.segments.length) + ' segments (' +
        fmtBytes(total) + ' reserved), ' + fmtCount(nblk) + ' live blocks: ' + fmtBytes(alloc) + ' allocated, ' +
        fmtBytes(pend) + ' pending free; ' + fmtBytes(free) + ' free (largest free block ' + fmtBytes(largest) + '); streams ' +
        Object.keys(streams).join(', ') + '.' + (L.orphans ? ' ' + L.orphans + ' blocks of segments the page does not hold are not drawn.' : '');
      var segs = L.segments.slice();
      if (order === 'size') segs.sort(function (x, y) { return y.size - x.size || x.addr - y.addr; });
      if (order === 'free') {
        var fr = function (s) { return s.blocks.reduce(function (t, b) { return b.state === 0 ? t + b.size : t; }, 0); };
        segs.sort(function (x, y) { return fr(y) - fr(x) || x.addr - y.addr; });
      }
      var W = Math.max(600, wrap.clientWidth || 1200), LBL = 250, ROW = 16, GAP = 4, bw = W - LBL - 12;
      var H = segs.length * (ROW + GAP) + 8, hlNode = null;
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
      svg.setAttribute('height', H);
      segs.forEach(function (s, k) {
        var y = 4 + k * (ROW + GAP), g = sv('g', { 'class': 'seg' }, svg);
        svText(g, 4, y + 12, fmtAddr(s.addr), { 'class': 'seglabel' });
        svText(g, LBL - 8, y + 12, fmtBytes(s.size) + ' \u00b7 ' + (s.pool === 0 ? 'small' : 'large') + ' \u00b7 s' + s.stream,
          { 'class': 'seglabel', 'text-anchor': 'end' });
        var bar = sv('rect', { 'class': 'segbar', x: LBL, y: y, width: bw, height: ROW }, g);
        bar.__seg = s;
        if (!(s.size > 0)) return;
        s.blocks.forEach(function (b) {
          var x = LBL + b.off / s.size * bw, w = Math.max(0.6, b.size / s.size * bw);
          var attrs = { 'class': b.state === 0 ? 'blk free' : 'blk', x: x.toFixed(2), y: y + 1, width: w.toFixed(2),
            height: ROW - 2, fill: b.state === 0 ? 'transparent' : STATE_COLORS[b.state] };
          if (b.state !== 0) {
            attrs['data-addr'] = String(s.addr + b.off);
            attrs['data-alloc'] = String(M.a[b.i]);
            attrs['data-state'] = b.state === 1 ? 'allocated' : 'pending';
          }
          var rc = sv('rect', attrs, g);
          rc.__blk = b; rc.__seg = s;
          if (b.state !== 0 && highlight !== null && M.a[b.i] === highlight) {
            rc.setAttribute('class', 'blk hl');
            hlNode = rc;
          }
        });
      });
      if (hlNode) {
        var top = Number(hlNode.getAttribute('y')) - 40;
        wrap.scrollTop = Math.max(0, top);
      }
    }

    svg.addEventListener('pointermove', function (evt) {
      var t = evt.target, s = t.__seg;
      if (!s) { hideTip(tip); return; }
      var b = t.__blk, rows = [];
      if (!b) {
        rows.push([null, 'segment', fmtBytes(s.size) + (s.expandable ? ' (expandable: largest mapped)' : '')]);
        rows.push([null, 'pool', s.pool === 0 ? 'small' : 'large']);
        rows.push([null, 'stream', String(s.stream)]);
        showTip(tip, wrap, evt, 'segment ' + fmtAddr(s.addr), rows);
        return;
      }
      rows.push([STATE_COLORS[b.state], 'state', STATE_NAMES[b.state]]);
      rows.push([null, 'size', fmtBytes(b.size)]);
      if (b.state !== 0) {
        var i = b.i;
        rows.push([null, 'requested', fmtBytes(b.size - M.waste[i])]);
        rows.push([null, 'allocated at', 'event ' + fmtCount(M.a[i]) + ' (' + fmtCount(current - M.a[i]) + ' events ago)']);
        if (M.r[i] >= 0) rows.push([null, 'free requested', 'event ' + fmtCount(M.r[i])]);
        rows.push([null, 'tag', tagName(M.tag[i])]);
      }
      rows.push([null, 'segment', fmtAddr(s.addr) + ' (' + fmtBytes(s.size) + ', ' + (s.pool === 0 ? 'small' : 'large') +
        ' pool, stream ' + s.stream + ')']);
      showTip(tip, wrap, evt, 'block ' + fmtAddr(s.addr + b.off), rows);
    });
    svg.addEventListener('pointerleave', function () { hideTip(tip); });
    var start = Number(D.summary && D.summary.peak_allocated_seq);
    var wpeak = M.windows.filter(function (w) { return w[3] === 'peak'; })[0];
    this.show(isFinite(start) && D.summary.peak_allocated_seq !== undefined ? start : (wpeak ? wpeak[2] : M.windows[0][0]));
  }

  fsc.StateModel = StateModel;
  fsc.StateView = StateView;
})(window.fsc);
