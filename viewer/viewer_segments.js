/*
 * viewer_segments.js — the segment map: each segment a bar, its blocks at their offset,
 * coloured by state or tag, with a tooltip per block.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtCount = fsc.fmtCount, fmtTime = fsc.fmtTime,
    fmtAddr = fsc.fmtAddr, tagName = fsc.tagName, el = fsc.el, sv = fsc.sv, svText = fsc.svText,
    clear = fsc.clear, byId = fsc.byId, legend = fsc.legend, showTip = fsc.showTip,
    hideTip = fsc.hideTip, XMODE = fsc.XMODE;

  /* ---- segment map ----------------------------------------------------- */

  var STATE_NAMES = ['free', 'allocated', 'pending free'];
  /* Okabe-Ito colours and shades of them: told apart with every common
   * colour-vision deficiency. */
  var STATE_COLORS = ['#eef1f5', '#0072B2', '#E69F00'];
  var PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442',
    '#004C7A', '#A36F00', '#006B4F', '#8E4F76', '#9B4300'];
  var OTHER_TAG = '#999999';

  /* Block rows: [offset, size, requested, state, tag, age_events, age_ns, count]. */
  function SegmentMap() {
    var layouts = D.layouts || [];
    var select = byId('seg-layout'), svg = byId('segmap'), tip = byId('tip-seg'), wrap = svg.parentNode;
    var colourBy = 'state', current = 0, order = 'addr', self = this;
    var orderSelect = byId('seg-order');
    orderSelect.addEventListener('change', function () { order = orderSelect.value; render(); });
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

    function freeBytes(s) {
      return s.blocks.reduce(function (sum, b) { return b[3] === 0 ? sum + b[1] : sum; }, 0);
    }
    /* The segments in the chosen order (address order is the data's). */
    function ordered(list) {
      if (order === 'addr') return list;
      var key = order === 'free' ? freeBytes : function (s) { return s.size; };
      return list.map(function (s) { return [key(s), s]; })
        .sort(function (a, b) { return b[0] - a[0] || a[1].addr - b[1].addr; })
        .map(function (p) { return p[1]; });
    }

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
      var segs = ordered(l.segments);
      var H = segs.length * (ROW + GAP) + 8;
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
      svg.setAttribute('height', H);
      segs.forEach(function (s, i) {
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
    fsc.onWindow('resize', function () { render(); });
    render();
    return self;
  }

  fsc.SegmentMap = SegmentMap;
})(window.fsc);
