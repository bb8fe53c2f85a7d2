/*
 * viewer_stacks.js — live bytes by line of code (#stacks) at the allocated
 * peak, at each OOM and at the event chosen in the state view: a table of
 * call sites (the allocating line, or the first frame in the program's own
 * code; the labels and their grouping are report's, computed in C and
 * carried as D.sites / D.tag_site / D.tag_mine), and two icicles of the same
 * bytes: root first (the program's entry on top, each row splitting its
 * parent by the frames it calls) and leaf first (the allocating lines on
 * top, each row below splitting a line by its callers). Frames are named
 * "file.py:123 func" and the frames report leaves out (interpreter,
 * dispatcher, nn.Module call machinery) are left out here too, so one line
 * reached through several stacks is one frame. Every frame is reachable
 * from the keyboard: arrows move the selection, Enter zooms.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtCount = fsc.fmtCount, fmtPct = fsc.fmtPct,
    el = fsc.el, sv = fsc.sv, svText = fsc.svText, clear = fsc.clear, byId = fsc.byId,
    showTip = fsc.showTip, hideTip = fsc.hideTip, tagName = fsc.tagName;
  var COLORS = ['#56B4E9', '#E69F00', '#009E73', '#F0E442', '#0072B2', '#D55E00', '#CC79A7', '#8FCBEF',
    '#F4C266', '#66C2A5'];
  var T = D.tag_tree || {}, PARENT = T.parent || [], NAME = T.name || [], KIND = T.kind || [];
  var SITES = D.sites || [], TSITE = D.tag_site || [], TMINE = D.tag_mine || [], SMINE = D.site_mine || [];
  var MAXD = 80;

  /* A node's own name as report shortens a frame: "file.py:123 func" (the
   * file's last component; "file:line:function" splits at the first ':'
   * followed by digits or '?' and another ':'). A plain tag stays as it is. */
  function shortName(t) {
    var nm = NAME[t];
    if (nm === null || nm === undefined) return tagName(t);
    if (nm === '') return '(no tag)';
    var m = /^([\s\S]*?):(\d+|\?):([\s\S]*)$/.exec(nm);
    if (!m) return nm;
    var file = m[1].replace(/^[\s\S]*[\/\\]/, ''), line = m[2] !== '?' && m[2] !== '0' ? ':' + m[2] : '';
    return (file && file !== '??' ? file + line + ' ' : '') + m[3];
  }
  function isRoot(t) { return t === null || t === undefined || t < 0 || ((PARENT[t] === -1 || PARENT[t] === undefined) && NAME[t] === ''); }
  function noise(t) { return KIND[t] === 0; }
  function parentOf(t) { var p = PARENT[t]; return p !== undefined && p !== null && p >= 0 && p !== t ? p : -1; }
  /* The call site of a page tag (mine: the first frame in the program's code). */
  function siteOf(t, mine) {
    if (t === null || t === undefined || t < 0) return '(untagged)';
    var ix = (mine ? TMINE : TSITE)[t];
    return ix !== undefined && ix !== null && SITES[ix] !== undefined ? SITES[ix] : tagName(t);
  }
  function siteIsMine(t) {
    var ix = t !== null && t !== undefined && t >= 0 ? TMINE[t] : undefined;
    return ix !== undefined && SMINE[ix] === 1;
  }
  function colour(label) {
    var h = 0;
    for (var i = 0; i < label.length; i++) h = (h * 31 + label.charCodeAt(i)) | 0;
    return COLORS[Math.abs(h) % COLORS.length];
  }
  function mk(name, up) {
    var me = { name: name, bytes: 0, self: 0, blocks: 0, kids: {}, parent: up || null, depth: up ? up.depth + 1 : 0 };
    if (up) up.kids[name] = me;
    return me;
  }
  function child(up, name) { return up.kids[name] || mk(name, up); }

  /* Root first: each kept frame under the kept frame that called it. */
  function rootTree(pairs) {
    var root = mk('all live blocks'), memo = {};
    function node(t) {
      if (isRoot(t)) return root;
      if (memo[t]) return memo[t];
      var up = node(parentOf(t));
      var me = noise(t) || up.depth >= MAXD ? up : child(up, shortName(t));
      memo[t] = me;
      return me;
    }
    pairs.forEach(function (p) {
      var nd = node(p[0]);
      nd.self += p[1];
      for (var x = nd; x; x = x.parent) { x.bytes += p[1]; x.blocks += p[2]; }
    });
    return root;
  }
  /* Leaf first: the call site on top, then the frames that called it. */
  function leafTree(pairs, mine) {
    var root = mk('all live blocks'), chains = {};
    function chain(t) {
      if (chains[t]) return chains[t];
      var names = [];
      for (var x = t; !isRoot(x) && names.length < 4 * MAXD; x = parentOf(x)) if (!noise(x)) names.push(shortName(x));
      var ix = (mine ? TMINE : TSITE)[t], site = siteOf(t, mine), k = names.indexOf(site);
      /* plain tags (ix -1) are their own path: the innermost name leads */
      var c = ix === -1 || ix === undefined || !names.length ? names : k >= 0 ? names.slice(k) : [site].concat(names);
      if (!c.length) c = [site];
      chains[t] = c.slice(0, MAXD);
      return chains[t];
    }
    pairs.forEach(function (p) {
      var c = p[0] === null || p[0] === undefined || p[0] < 0 ? ['(untagged)'] : chain(p[0]), nd = root;
      root.bytes += p[1]; root.blocks += p[2];
      c.forEach(function (name) { nd = child(nd, name); nd.bytes += p[1]; nd.blocks += p[2]; });
      nd.self += p[1];
    });
    return root;
  }
  function kidsOf(nd) {
    return Object.keys(nd.kids).map(function (k) { return nd.kids[k]; }).sort(function (a, b) {
      return b.bytes - a.bytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    });
  }

  function Stacks(stateView) {
    var svg = byId('stacksvg'), tip = byId('tip-stacks'), wrap = svg.parentNode, sel = byId('stacks-at');
    var info = byId('stacks-info'), selInfo = byId('stacks-sel'), dirSel = byId('stacks-dir'), mineBox = byId('stacks-mine');
    var table = byId('sites-table');
    var choices = [], root = null, focus = null, picked = null, moment = null, self = this;
    var M = stateView && stateView.model && stateView.model.windows.length ? stateView.model : null;

    function fromState(N) {
      var pairs = [], r = M.resolve(N);
      M.blocksAt(r.event).forEach(function (p) { pairs.push([M.tag[p[0]], M.size[p[0]], 1]); });
      return { pairs: pairs, event: r.event, exact: r.exact, asked: N };
    }
    function fromLayout(l) {
      var pairs = [];
      (l.segments || []).forEach(function (s) {
        s.blocks.forEach(function (b) { if (b[3] !== 0) pairs.push([b[4], b[1], b[7] || 1]); });
      });
      return { pairs: pairs, event: l.seq, exact: !l.blocks_merged, layout: true };
    }
    /* The peak and each OOM: from the state when it holds that event exactly, else the layout. */
    function at(seq, layout) {
      if (M && seq !== undefined && seq !== null && M.resolve(seq).exact) return fromState(seq);
      if (layout) return fromLayout(layout);
      if (M && seq !== undefined && seq !== null) return fromState(seq);
      return null;
    }
    var layouts = D.layouts || [];
    var peakLayout = layouts.filter(function (l) { return l.kind === 'peak_allocated' || l.kind === 'peak'; })[0];
    var peakSeq = D.summary ? D.summary.peak_allocated_seq : undefined;
    if (peakSeq === undefined && peakLayout) peakSeq = peakLayout.seq;
    choices.push({ label: 'at the allocated peak', get: function () { return at(peakSeq, peakLayout); } });
    (D.ooms || []).forEach(function (o) {
      var l = o.layout !== null && o.layout >= 0 ? layouts[o.layout] : null;
      choices.push({ label: 'at OOM #' + o.id + ' (event ' + fmtCount(o.seq) + ')', get: function () { return at(o.seq, l); } });
    });
    if (M) choices.push({ label: 'at the event chosen in the state view', get: function () { return fromState(stateView.current()); }, chosen: true });
    choices.forEach(function (c, i) { var o = el('option', null, c.label); o.value = String(i); sel.appendChild(o); });
    sel.addEventListener('change', function () { self.show(Number(sel.value)); });
    if (dirSel) dirSel.addEventListener('change', function () { build(); });
    if (mineBox) mineBox.addEventListener('change', function () { renderTable(); if (dirSel && dirSel.value === 'leaf') build(); });
    var currentChoice = 0;

    function mine() { return !!(mineBox && mineBox.checked); }

    /* ---- the table: live bytes by call site ---- */
    function renderTable() {
      if (!table || !moment) return;
      clear(table);
      var by = {}, total = 0, m = mine();
      moment.pairs.forEach(function (p) {
        var s = siteOf(p[0], m), e = by[s] || (by[s] = { site: s, bytes: 0, blocks: 0, mine: false });
        e.bytes += p[1]; e.blocks += p[2]; total += p[1];
        if (m && siteIsMine(p[0])) e.mine = true;
      });
      var rows = Object.keys(by).map(function (k) { return by[k]; }).sort(function (a, b) {
        return b.bytes - a.bytes || (a.site < b.site ? -1 : a.site > b.site ? 1 : 0);
      });
      table.setAttribute('data-total', String(total));
      table.setAttribute('data-sites', String(rows.length));
      var thead = el('thead'), hr = el('tr');
      [['#', ''], [m ? 'first frame in my code' : 'line of code (innermost frame)', 'l'], ['live bytes', 'l'], ['blocks', ''], ['share', '']].forEach(function (h) {
        hr.appendChild(el('th', h[1] || null, h[0]));
      });
      thead.appendChild(hr); table.appendChild(thead);
      var tb = el('tbody'), max = rows.length ? rows[0].bytes : 1, SHOWN = 25;
      rows.slice(0, SHOWN).forEach(function (r, i) {
        var tr = el('tr', 'site');
        tr.setAttribute('data-site', r.site);
        tr.setAttribute('data-bytes', String(r.bytes));
        tr.appendChild(el('td', null, String(i + 1)));
        var l = el('td', 'site-label', r.site + (m && !r.mine ? ' (no frame of my code: the allocating line)' : ''));
        tr.appendChild(l);
        var b = el('td', 'l'), bar = el('span', 'bar tagbar'), f = el('span');
        f.style.width = (100 * r.bytes / (max || 1)).toFixed(1) + '%';
        bar.appendChild(f); b.appendChild(bar); b.appendChild(document.createTextNode(fmtBytes(r.bytes)));
        tr.appendChild(b);
        tr.appendChild(el('td', null, fmtCount(r.blocks)));
        tr.appendChild(el('td', null, total ? fmtPct(r.bytes / total) : '\u2014'));
        tb.appendChild(tr);
      });
      if (rows.length > SHOWN) {
        var rest = rows.slice(SHOWN).reduce(function (a, r) { return a + r.bytes; }, 0);
        var tr2 = el('tr');
        tr2.appendChild(el('td'));
        tr2.appendChild(el('td', 'site-label', (rows.length - SHOWN) + ' more lines'));
        tr2.appendChild(el('td', 'l', fmtBytes(rest)));
        tr2.appendChild(el('td')); tr2.appendChild(el('td', null, total ? fmtPct(rest / total) : ''));
        tb.appendChild(tr2);
      }
      var tf = el('tr', 'total');
      tf.appendChild(el('td'));
      tf.appendChild(el('td', 'site-label', 'all ' + fmtCount(rows.length) + ' lines: every live block'));
      tf.appendChild(el('td', 'l', fmtBytes(total)));
      tf.appendChild(el('td', null, fmtCount(moment.pairs.reduce(function (a, p) { return a + p[2]; }, 0))));
      tf.appendChild(el('td', null, total ? '100 %' : ''));
      tb.appendChild(tf);
      table.appendChild(tb);
    }

    this.show = function (i) {
      currentChoice = i;
      sel.value = String(i);
      var c = choices[i];
      moment = c ? c.get() : null;
      if (!moment) { info.textContent = 'No live blocks are known for this moment.'; clear(svg); if (table) clear(table); return; }
      var t = 'Live bytes ' + (moment.event !== undefined && moment.event !== null ? 'after event ' + fmtCount(moment.event) : '') + ': ' +
        fmtBytes(moment.pairs.reduce(function (a, p) { return a + p[1]; }, 0)) + ' in ' +
        fmtCount(moment.pairs.length) + (moment.layout ? ' blocks or runs of blocks (from the layout)' : ' blocks') + '.';
      if (moment.asked !== undefined && !moment.exact) t += ' Event ' + fmtCount(moment.asked) + ' is not carried: this is the nearest carried event.';
      info.textContent = t;
      renderTable();
      build();
    };
    this.refreshChosen = function () { if (choices[currentChoice] && choices[currentChoice].chosen) this.show(currentChoice); };
    this.chosenIndex = function () { for (var i = 0; i < choices.length; i++) if (choices[i].chosen) return i; return -1; };

    /* ---- the icicles ---- */
    function build() {
      if (!moment) return;
      var leaf = dirSel && dirSel.value === 'leaf';
      root = leaf ? leafTree(moment.pairs, mine()) : rootTree(moment.pairs);
      root.name = 'all live blocks';
      focus = root; picked = root;
      svg.setAttribute('data-order', leaf ? 'leaf' : 'root');
      render();
      say();
    }
    function pathOf(nd) { var p = []; for (var x = nd; x && x.parent; x = x.parent) p.push(x.name); return p; }
    function say() {
      if (!selInfo || !picked) return;
      var p = pathOf(picked), leaf = svg.getAttribute('data-order') === 'leaf';
      selInfo.textContent = 'Selected: ' + picked.name + ' \u2014 ' + fmtBytes(picked.bytes) + ' (' +
        fmtPct(root.bytes ? picked.bytes / root.bytes : 0) + ') in ' + fmtCount(picked.blocks) + ' blocks' +
        (p.length > 1 ? (leaf ? '; reached through ' : '; called from ') + p.slice(1, 4).join(' \u2190 ') + (p.length > 4 ? ' \u2026' : '') : '') + '.';
      svg.setAttribute('data-selected', picked.name);
    }
    function render() {
      clear(svg);
      hideTip(tip);
      var W = Math.max(300, wrap.clientWidth || 1200), ROW = 18, rects = 0;
      function depthOf(nd) { var d = 0; for (var k in nd.kids) d = Math.max(d, 1 + depthOf(nd.kids[k])); return d; }
      var maxDepth = Math.min(MAXD, depthOf(focus));
      var H = (maxDepth + 1) * ROW + 4;
      svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
      svg.setAttribute('height', H);
      function lay(nd, x, w, d) {
        nd.rect = null;
        if (w < 0.5 || d > MAXD) return;
        var r = sv('rect', { 'class': 'frame' + (nd === picked ? ' sel' : ''), x: x.toFixed(2), y: d * ROW, width: Math.max(0.5, w - 0.5).toFixed(2), height: ROW - 1,
          fill: d === 0 ? '#cbd2d9' : colour(nd.name), 'data-label': nd.name }, svg);
        r.__node = nd;
        nd.rect = r;
        rects++;
        if (w > 40) {
          var chars = Math.floor((w - 6) / 6.2), label = nd.name.length > chars ? nd.name.slice(0, chars - 1) + '\u2026' : nd.name;
          var tx = svText(svg, x + 3, d * ROW + 13, label, { 'class': 'framelabel' });
          tx.__node = nd;
        }
        var cx = x;
        kidsOf(nd).forEach(function (k) {
          var kw = nd.bytes > 0 ? w * k.bytes / nd.bytes : 0;
          lay(k, cx, kw, d + 1);
          cx += kw;
        });
      }
      lay(focus, 0, W, 0);
      svg.setAttribute('data-frames', String(rects));
    }
    function pick(nd) {
      if (!nd) return;
      if (picked && picked.rect) picked.rect.setAttribute('class', 'frame');
      picked = nd;
      /* a frame outside the zoomed part: zoom out until it is inside */
      var inside = false;
      for (var x = nd; x; x = x.parent) if (x === focus) inside = true;
      if (!inside) { focus = root; render(); }
      if (picked.rect) picked.rect.setAttribute('class', 'frame sel');
      say();
    }
    svg.addEventListener('pointermove', function (evt) {
      var nd = evt.target.__node;
      if (!nd) { hideTip(tip); return; }
      var rows = [[null, 'live', fmtBytes(nd.bytes) + ' (' + fmtPct(root.bytes ? nd.bytes / root.bytes : 0) + ')'],
        [null, 'blocks', fmtCount(nd.blocks)], [null, 'in this frame itself', fmtBytes(nd.self)]];
      var path = pathOf(nd);
      path.slice(0, 14).forEach(function (p, i) { rows.push([null, i === 0 ? 'frames' : '', p]); });
      if (path.length > 14) rows.push([null, '', '\u2026 ' + (path.length - 14) + ' more frames']);
      showTip(tip, wrap, evt, nd.name, rows);
    });
    svg.addEventListener('pointerleave', function () { hideTip(tip); });
    /* Keyboard: arrows move the selection (up: the row above, down: its
     * largest part, left and right: neighbours), Enter zooms into it,
     * Escape or Backspace zooms out one level, Home to the top. */
    svg.setAttribute('tabindex', '0');
    svg.addEventListener('keydown', function (evt) {
      var k = evt.key;
      if (!picked) return;
      if (k === 'ArrowDown') { var ks = kidsOf(picked); if (ks.length) pick(ks[0]); }
      else if (k === 'ArrowUp') { if (picked.parent) pick(picked.parent); }
      else if (k === 'ArrowRight' || k === 'ArrowLeft') {
        if (picked.parent) {
          var sib = kidsOf(picked.parent), i = sib.indexOf(picked) + (k === 'ArrowRight' ? 1 : -1);
          if (i >= 0 && i < sib.length) pick(sib[i]);
        }
      }
      else if (k === 'Enter' || k === ' ') { focus = picked; render(); say(); }
      else if ((k === 'Escape' || k === 'Backspace') && focus && focus.parent) { focus = focus.parent; render(); }
      else if (k === 'Home' && focus !== root) { focus = root; picked = root; render(); say(); }
      else return;
      evt.preventDefault();
    });
    svg.addEventListener('click', function (evt) {
      var nd = evt.target.__node;
      if (!nd) return;
      picked = nd;
      focus = nd === focus && nd.parent ? nd.parent : nd;
      render();
      say();
    });
    if (choices.length) this.show(0); else info.textContent = 'No live blocks are known for this run.';
  }

  fsc.Stacks = Stacks;
  fsc.siteOf = siteOf;
})(window.fsc);
