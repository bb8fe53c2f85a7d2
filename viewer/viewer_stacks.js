/*
 * viewer_stacks.js — live bytes by tag path as an icicle (#stacks): the
 * root on top, each tag's children below it, widths proportional to the
 * bytes of live blocks (allocated or pending free) under them. For imported
 * PyTorch snapshots a tag path is the call stack (frames as the import kept
 * them), so this is memory_viz's flamegraph of live memory. Shown at the
 * allocated peak, at each OOM and at the event chosen in the state view.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtCount = fsc.fmtCount, fmtPct = fsc.fmtPct,
    el = fsc.el, sv = fsc.sv, svText = fsc.svText, clear = fsc.clear, byId = fsc.byId,
    showTip = fsc.showTip, hideTip = fsc.hideTip, tagName = fsc.tagName;
  var COLORS = ['#56B4E9', '#E69F00', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#8FCBEF',
    '#F4C266', '#66C2A5'];

  /* Bytes per page tag from a list of [tag, bytes]. */
  function tree(pairs) {
    var T = D.tag_tree || {}, parent = T.parent || [], name = T.name || [];
    var nodes = { root: { key: 'root', name: 'all live blocks', bytes: 0, kids: {}, self: 0, depth: 0 } };
    function node(t) {
      if (t === null || t === undefined || t < 0) return nodes.root;
      if (nodes[t]) return nodes[t];
      /* the tree's root (tag 0, no name) is the top bar itself */
      if ((parent[t] === -1 || parent[t] === undefined) && name[t] === '') return nodes.root;
      var p = parent[t], up = node(p !== undefined && p !== null && p >= 0 && p !== t ? p : -1);
      var nm = name[t];
      var me = { key: t, name: nm !== null && nm !== undefined ? (nm === '' ? '(no tag)' : nm) : tagName(t), bytes: 0, kids: {}, self: 0,
        parent: up, depth: up.depth + 1 };
      up.kids[t] = me;
      nodes[t] = me;
      return me;
    }
    pairs.forEach(function (p) {
      var nd = node(p[0]);
      nd.self += p[1];
      for (var x = nd; x; x = x.parent) x.bytes += p[1];
    });
    return nodes.root;
  }

  function Stacks(stateView) {
    var svg = byId('stacksvg'), tip = byId('tip-stacks'), wrap = svg.parentNode, sel = byId('stacks-at');
    var info = byId('stacks-info'), choices = [], root = null, focus = null, self = this;
    var M = stateView && stateView.model && stateView.model.windows.length ? stateView.model : null;

    function fromState(N) {
      var pairs = [], r = M.resolve(N);
      M.blocksAt(r.event).forEach(function (p) { pairs.push([M.tag[p[0]], M.size[p[0]]]); });
      return { pairs: pairs, event: r.event, exact: r.exact, asked: N };
    }
    function fromLayout(l) {
      var pairs = [];
      (l.segments || []).forEach(function (s) {
        s.blocks.forEach(function (b) { if (b[3] !== 0) pairs.push([b[4], b[1]]); });
      });
      return { pairs: pairs, event: l.seq, exact: !l.blocks_merged, layout: true };
    }
    /* The peak and each OOM: from the state when it holds that event exactly, else the layout. */
    function moment(seq, layout) {
      if (M && seq !== undefined && seq !== null && M.resolve(seq).exact) return fromState(seq);
      if (layout) return fromLayout(layout);
      if (M && seq !== undefined && seq !== null) return fromState(seq);
      return null;
    }
    var layouts = D.layouts || [];
    var peakLayout = layouts.filter(function (l) { return l.kind === 'peak_allocated' || l.kind === 'peak'; })[0];
    var peakSeq = D.summary ? D.summary.peak_allocated_seq : undefined;
    if (peakSeq === undefined && peakLayout) peakSeq = peakLayout.seq;
    choices.push({ label: 'at the allocated peak', get: function () { return moment(peakSeq, peakLayout); } });
    (D.ooms || []).forEach(function (o) {
      var l = o.layout !== null && o.layout >= 0 ? layouts[o.layout] : null;
      choices.push({ label: 'at OOM #' + o.id + ' (event ' + fmtCount(o.seq) + ')', get: function () { return moment(o.seq, l); } });
    });
    if (M) choices.push({ label: 'at the event chosen in the state view', get: function () { return fromState(stateView.current()); }, chosen: true });
    choices.forEach(function (c, i) { var o = el('option', null, c.label); o.value = String(i); sel.appendChild(o); });
    sel.addEventListener('change', function () { self.show(Number(sel.value)); });
    var currentChoice = 0;

    this.show = function (i) {
      currentChoice = i;
      sel.value = String(i);
      var c = choices[i], m = c ? c.get() : null;
      if (!m) { info.textContent = 'No live blocks are known for this moment.'; clear(svg); return; }
      root = tree(m.pairs); focus = root;
      var t = 'Live bytes ' + (m.event !== undefined && m.event !== null ? 'after event ' + fmtCount(m.event) : '') + ': ' +
        fmtBytes(root.bytes) + ' in ' + fmtCount(m.pairs.length) + (m.layout ? ' blocks or runs of blocks (from the layout)' : ' blocks') + '.';
      if (m.asked !== undefined && !m.exact) t += ' Event ' + fmtCount(m.asked) + ' is not carried: this is the nearest carried event.';
      info.textContent = t + ' Click a frame to zoom into it, the top bar to zoom out.';
      render();
    };
    this.refreshChosen = function () { if (choices[currentChoice] && choices[currentChoice].chosen) this.show(currentChoice); };
    this.chosenIndex = function () { for (var i = 0; i < choices.length; i++) if (choices[i].chosen) return i; return -1; };

    function render() {
      clear(svg);
      hideTip(tip);
      var W = Math.max(600, wrap.clientWidth || 1200), ROW = 18, maxDepth = 0, rects = 0;
      function depthOf(nd) { var d = 0; for (var k in nd.kids) d = Math.max(d, 1 + depthOf(nd.kids[k])); return d; }
      maxDepth = Math.min(80, depthOf(focus));
      var H = (maxDepth + 1) * ROW + 4;
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
      svg.setAttribute('height', H);
      function lay(nd, x, w, d) {
        if (w < 0.5 || d > 80) return;
        var r = sv('rect', { 'class': 'frame', x: x.toFixed(2), y: d * ROW, width: Math.max(0.5, w - 0.5).toFixed(2), height: ROW - 1,
          fill: d === 0 ? '#cbd2d9' : COLORS[(d + (typeof nd.key === 'number' ? nd.key : 0)) % COLORS.length] }, svg);
        r.__node = nd;
        rects++;
        if (w > 40) {
          var chars = Math.floor((w - 6) / 6.2), label = nd.name.length > chars ? '\u2026' + nd.name.slice(nd.name.length - chars + 1) : nd.name;
          var tx = svText(svg, x + 3, d * ROW + 13, label, { 'class': 'framelabel' });
          tx.__node = nd;
        }
        var kids = Object.keys(nd.kids).map(function (k) { return nd.kids[k]; }).sort(function (a, b) { return b.bytes - a.bytes; });
        var cx = x;
        kids.forEach(function (k) {
          var kw = nd.bytes > 0 ? w * k.bytes / nd.bytes : 0;
          lay(k, cx, kw, d + 1);
          cx += kw;
        });
      }
      lay(focus, 0, W, 0);
      svg.setAttribute('data-frames', String(rects));
    }
    svg.addEventListener('pointermove', function (evt) {
      var nd = evt.target.__node;
      if (!nd) { hideTip(tip); return; }
      var rows = [[null, 'live', fmtBytes(nd.bytes) + ' (' + fmtPct(root.bytes ? nd.bytes / root.bytes : 0) + ')'],
        [null, 'in this frame itself', fmtBytes(nd.self)]];
      var path = [];
      for (var x = nd; x && x.parent; x = x.parent) path.push(x.name);
      path.slice(0, 14).forEach(function (p, i) { rows.push([null, i === 0 ? 'frames' : '', p]); });
      if (path.length > 14) rows.push([null, '', '\u2026 ' + (path.length - 14) + ' outer frames']);
      showTip(tip, wrap, evt, nd.name, rows);
    });
    svg.addEventListener('pointerleave', function () { hideTip(tip); });
    /* Keyboard: Escape or Backspace zooms out one level, Home to the top. */
    svg.setAttribute('tabindex', '0');
    svg.addEventListener('keydown', function (evt) {
      if ((evt.key === 'Escape' || evt.key === 'Backspace') && focus && focus.parent) { focus = focus.parent; render(); }
      else if (evt.key === 'Home' && focus !== root) { focus = root; render(); }
      else return;
      evt.preventDefault();
    });
    svg.addEventListener('click', function (evt) {
      var nd = evt.target.__node;
      if (!nd) return;
      focus = nd === focus && nd.parent ? nd.parent : nd;
      render();
    });
    if (choices.length) this.show(0); else info.textContent = 'No live blocks are known for this run.';
  }

  fsc.Stacks = Stacks;
})(window.fsc);
