/*
 * viewer_bands.js — the active memory timeline (#timeline): the largest
 * allocations of the run as stacked bands over time, on a canvas. Each
 * allocation is stacked on those alive when it was made; when one below it
 * is freed, it drops by that size. The other allocations are summed per tag
 * at evenly spaced sample events and stacked on top. Hover names the
 * allocation (its row of the blocks table); a click opens the allocator
 * state there with the block highlighted.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtCount = fsc.fmtCount, fmtTime = fsc.fmtTime,
    fmtAddr = fsc.fmtAddr, tagName = fsc.tagName, byId = fsc.byId, showTip = fsc.showTip,
    hideTip = fsc.hideTip, legend = fsc.legend;

  /* Okabe-Ito, then darker and lighter shades of it: safe for colour-blind readers;
   * neighbouring bands are also split by a thin white line. */
  var PALETTE = ['#0072B2', '#E69F00', '#009E73', '#56B4E9', '#D55E00', '#CC79A7', '#F0E442',
    '#004C7A', '#A36F00', '#006B4F', '#8FCBEF', '#9B4300', '#8E4F76'];
  var AGG_COLORS = ['#B9D4E8', '#F4D9A6', '#A9DCCB', '#CBE6F7', '#F2C3A6', '#EBCBDD', '#F8F2B0',
    '#C9C9C9', '#D8D8D8', '#BFD8C9', '#E3D3F0', '#DDDDDD'];

  /* Frames of a tag: the names from the outermost to the innermost. */
  function frames(t) {
    var T = D.tag_tree, out = [];
    if (!T || !T.parent) return out;
    for (var g = 0; t !== null && t !== undefined && t >= 0 && g < 4096; g++) {
      if (T.name[t] !== null && T.name[t] !== undefined && T.name[t] !== '') out.push(T.name[t]);
      t = T.parent[t];
    }
    return out.reverse();
  }
  fsc.frames = frames;

  /* seq -> time, piecewise linear over every (seq, time) pair the page knows. */
  function SeqClock(B) {
    var pts = [];
    var TL = D.timeline || {};
    (TL.seq || []).forEach(function (s, i) { pts.push([s, TL.t[i]]); });
    for (var i = 0; i < B.a.length; i++) {
      pts.push([B.a[i], B.ta[i]]);
      if (B.c[i] >= 0 && B.tc[i] >= 0) pts.push([B.c[i], B.tc[i]]);
    }
    (D.markers || []).concat(D.ooms || []).forEach(function (m) { pts.push([m.seq, m.t]); });
    pts.sort(function (x, y) { return x[0] - y[0]; });
    var s = [], t = [];
    pts.forEach(function (p) {
      if (typeof p[0] !== 'number' || typeof p[1] !== 'number') return;
      if (s.length && p[0] === s[s.length - 1]) return;
      if (t.length && p[1] < t[t.length - 1]) return; /* no clock: keep it monotonic */
      s.push(p[0]); t.push(p[1]);
    });
    this.ok = s.length > 1 && t[t.length - 1] > t[0];
    this.at = function (q) {
      if (!s.length) return 0;
      var i = fsc.lowerBound(s, q);
      if (i <= 0) return t[0];
      if (i >= s.length) return t[t.length - 1];
      if (s[i] === q) return t[i];
      var f = (q - s[i - 1]) / (s[i] - s[i - 1]);
      return t[i - 1] + f * (t[i] - t[i - 1]);
    };
  }

  function Bands() {
    var B = D.bands, self = this;
    var canvas = byId('bands'), wrap = canvas.parentNode, tip = byId('tip-bands'), info = byId('bands-info');
    if (!B || !B.a || !B.allocations) {
      info.textContent = 'This database has no block lifetimes (table blocks): no allocation timeline.';
      canvas.height = 20;
      return;
    }
    var n = B.a.length, E = B.events || 1;
    var end = B.c.map(function (c) { return c >= 0 ? c : E; });
    /* ---- stacking, as memory_viz does it -------------------------------- */
    var evts = [];
    for (var i = 0; i < n; i++) { evts.push([B.a[i], 1, i]); if (end[i] < E) evts.push([end[i], 0, i]); }
    evts.sort(function (x, y) { return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    var stack = [], off = new Float64Array(n), steps = [], chg = [0], tot = [0], cur = 0;
    for (i = 0; i < n; i++) steps.push([]);
    evts.forEach(function (ev) {
      var x = ev[0], k = ev[2];
      if (ev[1] === 1) {
        off[k] = cur; stack.push(k); steps[k].push(x, cur); cur += B.size[k];
      } else {
        var p = stack.indexOf(k);
        stack.splice(p, 1);
        for (var j = p; j < stack.length; j++) { var q = stack[j]; off[q] -= B.size[k]; steps[q].push(x, off[q]); }
        cur -= B.size[k];
      }
      if (chg[chg.length - 1] === x) tot[tot.length - 1] = cur; else { chg.push(x); tot.push(cur); }
    });
    var S = B.samples || [], AG = B.agg || [];
    /* Sum of the band allocations at sample j, and the summed bands above. */
    function topAt(x) { var k = fsc.lowerBound(chg, x + 0.5) - 1; return k >= 0 ? tot[k] : 0; }
    var ymax = 1;
    var xs = chg.concat(S).sort(function (a, b) { return a - b; });
    xs.forEach(function (x) {
      var j = fsc.lowerBound(S, x + 0.5) - 1, h = topAt(x);
      if (j >= 0) AG.forEach(function (g) { h += g.v[j]; });
      if (h > ymax) ymax = h;
    });
    var clock = new SeqClock(B), mode = 'seq';
    var x0 = 0, x1 = E;
    var modeSel = byId('bands-x');
    if (!clock.ok) { modeSel.disabled = true; }
    modeSel.addEventListener('change', function () { mode = modeSel.value; draw(); });

    info.textContent = fmtCount(n) + ' largest allocations (by size \u00d7 lifetime, of ' + fmtCount(B.allocations) +
      ') drawn as their own band' + (n < B.asked && n < B.allocations ? ' (' + fmtCount(B.asked) + ' asked for; fewer fit the size bound)' : '') +
      '; the others summed per tag at ' + fmtCount(S.length) + ' sample events.';
    var items = AG.map(function (g, k) {
      var name = g.tag === -2 ? 'other allocations, all other tags' : 'other allocations of ' + fsc.shortTag(g.tag, 50);
      return { label: name, color: AGG_COLORS[k % AGG_COLORS.length] };
    });
    legend(byId('legend-bands'), [{ label: 'one allocation (colours repeat)', color: PALETTE[0] }].concat(items)
      .concat(D.timeline && D.timeline.allocated ? [{ label: 'allocated (maximum of each timeline bucket)', color: '#222222', kind: 'line' }] : []));

    var PADL = 70, PADR = 12, PADT = 10, PADB = 26, W = 0, H = 0, dpr = window.devicePixelRatio || 1;
    function X(seq) {
      var v = mode === 'time' ? clock.at(seq) : seq, a = mode === 'time' ? clock.at(x0) : x0, b = mode === 'time' ? clock.at(x1) : x1;
      return PADL + (v - a) / Math.max(1e-9, b - a) * (W - PADL - PADR);
    }
    function Y(bytes) { return PADT + (1 - bytes / ymax) * (H - PADT - PADB); }
    function seqAtPx(px) {
      var f = (px - PADL) / (W - PADL - PADR);
      if (mode !== 'time') return x0 + f * (x1 - x0);
      var ta = clock.at(x0), tb = clock.at(x1), tt = ta + f * (tb - ta), lo = x0, hi = x1;
      for (var it = 0; it < 50; it++) { var mid = (lo + hi) / 2; if (clock.at(mid) < tt) lo = mid; else hi = mid; }
      return (lo + hi) / 2;
    }
    this.X = function (s) { return X(s); };
    this.Y = function (b) { return Y(b); };

    function draw() {
      W = Math.max(600, wrap.clientWidth || 1200); H = 360;
      canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
      canvas.style.height = H + 'px';
      var g = canvas.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, W, H);
      g.save();
      g.beginPath(); g.rect(PADL, PADT, W - PADL - PADR, H - PADT - PADB); g.clip();
      /* the band allocations */
      for (var k = 0; k < n; k++) {
        if (end[k] < x0 || B.a[k] > x1) continue;
        var st = steps[k], y0 = Y(0), h = y0 - Y(B.size[k]);
        g.fillStyle = PALETTE[k % PALETTE.length];
        /* Steps narrower than half a pixel are drawn as part of the next one. */
        var from = null;
        for (var p = 0; p < st.length; p += 2) {
          var last = p + 2 >= st.length;
          var xa = X(Math.max(st[p], x0)), xb = X(Math.min(last ? end[k] : st[p + 2], x1));
          if (from !== null) xa = from;
          if (xb <= xa) continue;
          if (!last && xb - xa < 0.5) { from = xa; continue; }
          from = null;
          var yt = Y(st[p + 1] + B.size[k]);
          g.fillRect(xa, yt, Math.max(0.5, xb - xa), Math.max(0.5, h - 0.4));
        }
      }
      /* the summed bands, on top: one polygon each, stepping at every
       * sample and at every change of the band allocations below */
      if (S.length) {
        var bounds = xs.filter(function (x, q) { return (q === 0 || x !== xs[q - 1]) && x <= x1; });
        var px = [], base = [], vals = [];
        var stackAt = function (b, j) { for (var a = 0; a < AG.length && j >= 0; a++) b += AG[a].v[j]; return b; };
        for (var q = 0; q < bounds.length; q++) {
          var xa2 = bounds[q], xb2 = q + 1 < bounds.length ? bounds[q + 1] : Math.min(x1, E);
          if (xb2 < x0) continue;
          var j = fsc.lowerBound(S, xa2 + 0.5) - 1;
          var pa = X(Math.max(xa2, x0)), pb = X(Math.min(xb2, x1)), m = vals.length - 1;
          if (m >= 0 && pa - px[2 * m] < 0.5) {
            /* within half a pixel of the previous interval: one interval,
             * drawn with the higher of the two stacks (a spike stays visible) */
            px[2 * m + 1] = pb;
            var b2 = topAt(xa2);
            if (stackAt(b2, j) > stackAt(base[m], vals[m])) { base[m] = b2; vals[m] = j; }
            continue;
          }
          px.push(pa, pb);
          base.push(topAt(xa2));
          vals.push(j);
        }
        var lower = base.slice();
        for (var a = 0; a < AG.length; a++) {
          var v = AG[a].v, upper = lower.map(function (b, q) { return vals[q] >= 0 ? b + v[vals[q]] : b; });
          g.fillStyle = AGG_COLORS[a % AGG_COLORS.length];
          g.beginPath();
          for (q = 0; q < upper.length; q++) {
            var yu = Y(upper[q]);
            if (q === 0) g.moveTo(px[0], yu); else g.lineTo(px[2 * q], yu);
            g.lineTo(px[2 * q + 1], yu);
          }
          for (q = lower.length - 1; q >= 0; q--) {
            var yl = Y(lower[q]);
            g.lineTo(px[2 * q + 1], yl);
            g.lineTo(px[2 * q], yl);
          }
          g.closePath();
          g.fill();
          lower = upper;
        }
      }
      /* steps and OOMs */
      /* The allocated bytes (each timeline bucket's maximum) as a line: the
       * envelope of the stack, so a peak narrower than a sample still shows. */
      var TL = D.timeline || {};
      if (TL.seq && TL.allocated && TL.seq.length) {
        g.strokeStyle = '#222222'; g.lineWidth = 0.8; g.globalAlpha = 0.75; g.setLineDash([]);
        g.beginPath();
        var started = false;
        for (var q2 = 0; q2 < TL.seq.length; q2++) {
          var sa = TL.seq[q2], sb = q2 + 1 < TL.seq.length ? TL.seq[q2 + 1] : E;
          if (sb < x0 || sa > x1) continue;
          var ya = Y(TL.allocated[q2]), xa3 = X(Math.max(sa, x0)), xb3 = X(Math.min(sb, x1));
          if (!started) { g.moveTo(xa3, ya); started = true; } else g.lineTo(xa3, ya);
          g.lineTo(xb3, ya);
        }
        g.stroke();
        g.globalAlpha = 1;
      }
      /* Markers as dashed lines while they are at least 6 px apart on
       * average, else as ticks under the plot (zoom in to see the lines). */
      var shown = (D.markers || []).filter(function (m) { return m.seq >= x0 && m.seq <= x1; });
      var dense = shown.length > (W - PADL - PADR) / 6;
      g.setLineDash(dense ? [] : [3, 3]); g.strokeStyle = '#52606d'; g.lineWidth = 1;
      shown.forEach(function (m) {
        var x = Math.round(X(m.seq)) + 0.5;
        g.beginPath(); g.moveTo(x, dense ? H - PADB - 5 : PADT); g.lineTo(x, H - PADB); g.stroke();
      });
      /* Each marker line is labelled with its text where there is room
       * (70 px apart), as the memory chart labels them. */
      var labelled = 0;
      if (!dense) {
        var lastX = -1e9;
        g.fillStyle = '#52606d'; g.font = '10px system-ui, sans-serif'; g.textAlign = 'left'; g.textBaseline = 'top';
        shown.forEach(function (m) {
          var x = X(m.seq), t = String(m.text || '');
          if (x - lastX < 70) return;
          /* near the right edge the label goes to the left of its line */
          var right = x > W - PADR - 80;
          g.textAlign = right ? 'right' : 'left';
          g.fillText(t.length > 14 ? t.slice(0, 13) + '\u2026' : t, right ? x - 3 : x + 3, PADT + 1);
          lastX = x;
          labelled++;
        });
      }
      canvas.setAttribute('data-marker-labels', String(labelled));
      g.setLineDash([]); g.strokeStyle = '#D55E00'; g.lineWidth = 1.5;
      (D.ooms || []).forEach(function (o) {
        if (o.seq < x0 || o.seq > x1) return;
        var x = Math.round(X(o.seq)) + 0.5;
        g.beginPath(); g.moveTo(x, PADT); g.lineTo(x, H - PADB); g.stroke();
      });
      g.restore();
      /* axes */
      g.fillStyle = '#52606d'; g.strokeStyle = '#9aa5b1'; g.font = '11px system-ui, sans-serif';
      g.textAlign = 'right'; g.textBaseline = 'middle';
      fsc.byteTicks(ymax, 6).forEach(function (t) {
        var y = Y(t.v);
        g.fillText(t.label, PADL - 6, y);
        g.beginPath(); g.moveTo(PADL - 3, Math.round(y) + 0.5); g.lineTo(PADL, Math.round(y) + 0.5); g.stroke();
      });
      g.textAlign = 'center'; g.textBaseline = 'top';
      var lo = mode === 'time' ? clock.at(x0) : x0, hi = mode === 'time' ? clock.at(x1) : x1;
      fsc.xTicks(lo, hi, mode === 'time' ? 'time' : 'seq', 8).forEach(function (t) {
        var f = (t.v - lo) / Math.max(1e-9, hi - lo), x = PADL + f * (W - PADL - PADR);
        g.fillText(t.label, x, H - PADB + 5);
      });
      g.beginPath(); g.moveTo(PADL, H - PADB + 0.5); g.lineTo(W - PADR, H - PADB + 0.5); g.stroke();
      canvas.setAttribute('data-drawn', String(n));
      byId('bands-range').textContent = (mode === 'time' ? fmtTime(lo) + ' \u2013 ' + fmtTime(hi)
        : 'events ' + fmtCount(Math.round(x0)) + ' \u2013 ' + fmtCount(Math.round(x1)));
    }

    /* The band allocation under (px, py), or -1; else the summed band. */
    function hit(px, py) {
      var seq = seqAtPx(px), bytes = (1 - (py - PADT) / (H - PADT - PADB)) * ymax;
      for (var k = 0; k < n; k++) {
        if (B.a[k] > seq || end[k] <= seq) continue;
        var st = steps[k], p = 0;
        while (p + 2 < st.length && st[p + 2] <= seq) p += 2;
        if (bytes >= st[p + 1] && bytes < st[p + 1] + B.size[k]) return { band: k, seq: seq };
      }
      var j = fsc.lowerBound(S, seq + 0.5) - 1, base = topAt(seq);
      if (j >= 0) for (var a = 0; a < AG.length; a++) {
        if (bytes >= base && bytes < base + AG[a].v[j]) return { agg: a, seq: seq, bytes: AG[a].v[j], at: S[j] };
        base += AG[a].v[j];
      }
      return { seq: seq };
    }
    /* Tooltip text of band k: its row of the blocks table. */
    function bandRows(k) {
      var rows = [], life = end[k] - B.a[k];
      rows.push([PALETTE[k % PALETTE.length], 'size', fmtBytes(B.size[k])]);
      rows.push([null, 'requested', fmtBytes(B.req[k])]);
      function ent(seq) { var e = fsc.traceEntry(seq); return e ? ' \u00b7 ' + e : ''; }
      rows.push([null, 'allocated', 'event ' + fmtCount(B.a[k]) + ' at ' + fmtTime(B.ta[k]) + ent(B.a[k])]);
      rows.push([null, 'free requested', B.r[k] >= 0 ? 'event ' + fmtCount(B.r[k]) + ' at ' + fmtTime(B.tr[k]) + ent(B.r[k]) : 'never']);
      rows.push([null, 'free completed', B.c[k] >= 0 ? 'event ' + fmtCount(B.c[k]) + ' at ' + fmtTime(B.tc[k]) + ent(B.c[k]) : 'never (live at the end)']);
      rows.push([null, 'lifetime', fmtCount(life) + ' events' + (B.c[k] >= 0 && B.tc[k] >= 0 ? ', ' + fmtTime(B.tc[k] - B.ta[k]) : '')]);
      rows.push([null, 'stream, pool', B.stream[k] + ', ' + (B.pool[k] === 0 ? 'small' : 'large')]);
      rows.push([null, 'tag', tagName(B.tag[k])]);
      var fr = frames(B.tag[k]);
      for (var q = fr.length - 1, shown = 0; q >= 0 && shown < 12; q--, shown++)
        rows.push([null, shown === 0 ? 'frames' : '', fr[q]]);
      if (fr.length > 12) rows.push([null, '', '\u2026 ' + (fr.length - 12) + ' outer frames']);
      return rows;
    }
    this.rows = bandRows;
    this.count = n;
    this.block = function (k) { return { a: B.a[k], r: B.r[k], c: B.c[k], size: B.size[k], addr: B.addr[k], end: end[k], off: off[k], steps: steps[k] }; };
    /* A point inside band k (client coordinates), for tests and keyboard users. */
    this.locate = function (k) {
      var st = steps[k], s0 = st[0], s1 = st.length > 2 ? st[2] : end[k];
      var mid = (Math.max(s0, x0) + Math.min(s1, x1)) / 2, box = canvas.getBoundingClientRect();
      return { x: box.left + X(mid), y: box.top + Y(st[1] + B.size[k] / 2) };
    };

    canvas.addEventListener('pointermove', function (evt) {
      var box = canvas.getBoundingClientRect(), h = hit(evt.clientX - box.left, evt.clientY - box.top);
      if (h.band !== undefined) {
        canvas.style.cursor = 'pointer';
        showTip(tip, wrap, evt, 'block ' + fmtAddr(B.addr[h.band]), bandRows(h.band));
      } else if (h.agg !== undefined) {
        canvas.style.cursor = 'default';
        var g = AG[h.agg];
        showTip(tip, wrap, evt, g.tag === -2 ? 'other allocations, all other tags' : 'other allocations of this tag',
          [[AGG_COLORS[h.agg % AGG_COLORS.length], 'live', fmtBytes(h.bytes) + ' at event ' + fmtCount(h.at)],
           [null, 'tag', g.tag === -2 ? '(many)' : tagName(g.tag)]]);
      } else { canvas.style.cursor = 'default'; hideTip(tip); }
    });
    canvas.addEventListener('pointerleave', function () { hideTip(tip); });
    var drag = null;
    canvas.addEventListener('pointerdown', function (evt) { drag = { x: evt.clientX, x0: x0, x1: x1, moved: false }; });
    canvas.addEventListener('pointerup', function (evt) {
      var d = drag; drag = null;
      if (!d || d.moved) return;
      var box = canvas.getBoundingClientRect(), h = hit(evt.clientX - box.left, evt.clientY - box.top);
      if (h.band !== undefined && fsc.openBlock) fsc.openBlock(B.a[h.band], end[h.band], Math.round(h.seq));
      else if (fsc.openState) fsc.openState(Math.round(h.seq));
    });
    fsc.onWindow('pointermove', function (evt) {
      if (!drag) return;
      var dx = evt.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      var span = drag.x1 - drag.x0, shift = -dx / (W - PADL - PADR) * span;
      setRange(drag.x0 + shift, drag.x1 + shift);
    });
    function setRange(a, b) {
      var span = b - a;
      if (span < 4) { var c = (a + b) / 2; a = c - 2; b = c + 2; span = 4; }
      if (span > E) { a = 0; b = E; }
      if (a < 0) { b -= a; a = 0; }
      if (b > E) { a -= b - E; b = E; }
      x0 = Math.max(0, a); x1 = Math.min(E, b);
      draw();
    }
    this.setRange = setRange;
    canvas.addEventListener('wheel', function (evt) {
      evt.preventDefault();
      var box = canvas.getBoundingClientRect(), s = seqAtPx(evt.clientX - box.left), f = evt.deltaY < 0 ? 0.8 : 1.25;
      setRange(s - (s - x0) * f, s + (x1 - s) * f);
    }, { passive: false });
    canvas.addEventListener('dblclick', function () { setRange(0, E); });
    canvas.addEventListener('keydown', function (evt) {
      var span = x1 - x0, c = (x0 + x1) / 2, k = evt.key;
      if (k === '+' || k === '=') setRange(c - span * 0.4, c + span * 0.4);
      else if (k === '-') setRange(c - span * 0.625, c + span * 0.625);
      else if (k === 'ArrowLeft') setRange(x0 - span / 10, x1 - span / 10);
      else if (k === 'ArrowRight') setRange(x0 + span / 10, x1 + span / 10);
      else if (k === '0') setRange(0, E);
      else return;
      evt.preventDefault();
    });
    byId('bands-reset').addEventListener('click', function () { setRange(0, E); });
    fsc.onWindow('resize', draw);
    draw();
  }

  fsc.Bands = Bands;
})(window.fsc);
