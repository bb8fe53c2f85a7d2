/*
 * viewer_tables.js — the tables: bins, top tags and leaks, and the OOM cards with
 * their evidence and what-if suggestions.
 */
(function (fsc) {
  'use strict';
  var D = fsc.D, fmtBytes = fsc.fmtBytes, fmtPct = fsc.fmtPct, fmtCount = fsc.fmtCount,
    fmtTime = fsc.fmtTime, fmtAddr = fsc.fmtAddr, shortTag = fsc.shortTag, tagCell = fsc.tagCell,
    el = fsc.el, clear = fsc.clear, byId = fsc.byId, XMODE = fsc.XMODE, OOMS = fsc.OOMS;

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
    tagTable(byId('tags-leaks'), D.leaks, s.leaked_bytes, 'Nothing was live at the end of the run.');
    /* Never "leaks": weights and optimizer state live to the end by design. */
    var e = D.end_split, box = byId('end-split');
    if (e && box) {
      box.textContent = 'Persistent (allocated before the first step: weights, optimizer state, buffers): ' +
        fmtBytes(e.persistent_bytes) + ' in ' + fmtCount(e.persistent_blocks) + ' blocks; growth (allocated later, still live): ' +
        fmtBytes(e.growth_bytes) + ' in ' + fmtCount(e.growth_blocks) + ' blocks (' + e.why + '). ' +
        (e.recording_ends_at_oom ? 'The run ended in an out-of-memory error, so the program stopped early: what it held then says nothing of a leak. ' : '') +
        'Whether any of it is a leak the recording cannot tell.';
    }
  }

  /* ---- OOM panel ------------------------------------------------------- */

  function plural(n, noun) { return fmtCount(n) + ' ' + noun + (n === 1 ? '' : 's'); }

  function kv(grid, k, v) {
    var d = el('div');
    d.appendChild(el('span', 'k', k + ': '));
    d.appendChild(el('span', 'v', v));
    grid.appendChild(d);
  }

  /* One bar: allocated, free inside segments (the largest free block marked)
   * and the request, on the scale of the capacity (or reserved when unknown). */
  function oomBar(o) {
    var W = 600, H = 26, cap = Math.max(o.capacity_bytes || 0, o.reserved_bytes || 0, (o.allocated_bytes || 0) + (o.rounded_bytes || 0), 1);
    var svg = fsc.sv('svg', { 'class': 'oombar', viewBox: '0 0 ' + W + ' ' + H, width: W, height: H, role: 'img',
      'aria-label': 'allocated, free inside segments and the request' });
    function bx(v) { return v / cap * W; }
    var a = bx(o.allocated_bytes || 0), f = bx(o.free_in_reserved_bytes || 0), l = bx(o.largest_free_bytes || 0), q = bx(o.rounded_bytes || o.requested_bytes || 0);
    fsc.sv('rect', { x: 0, y: 2, width: W, height: 10, fill: '#ececec' }, svg);
    fsc.sv('rect', { x: 0, y: 2, width: a.toFixed(1), height: 10, fill: '#0072B2' }, svg);
    fsc.sv('rect', { x: a.toFixed(1), y: 2, width: f.toFixed(1), height: 10, fill: '#E69F00' }, svg);
    fsc.sv('rect', { x: a.toFixed(1), y: 2, width: l.toFixed(1), height: 10, fill: '#D55E00' }, svg);
    fsc.sv('rect', { x: 0, y: 15, width: Math.max(1, q).toFixed(1), height: 8, fill: '#CC79A7' }, svg);
    return svg;
  }

  function renderOoms(segmap) {
    var box = byId('oom-list');
    clear(box);
    if (!OOMS.length) { box.appendChild(el('p', 'empty', 'No out-of-memory error in this run.')); return; }
    OOMS.forEach(function (o, k) {
      var card = el('div', 'oom-card'), h = el('h3');
      card.id = 'oom-' + o.id; /* ooms.id: the number of report and whatif */
      h.appendChild(document.createTextNode('OOM #' + o.id));
      h.appendChild(el('span', 'cause ' + String(o.cause || '').replace(/[^a-z]/g, ''), o.cause || 'unknown'));
      var entry = fsc.traceEntry(o.seq);
      h.appendChild(el('span', 'muted', 'at ' + (o.t !== null && o.t !== undefined && XMODE === 'time' ? fmtTime(o.t) : 'event ' + fmtCount(o.seq)) +
        (entry ? ' (' + entry + ')' : '') +
        (o.tag !== undefined && o.tag !== null ? ' \u00b7 ' + shortTag(o.tag, 120) : '')));
      card.appendChild(h);
      var grid = el('div', 'oom-grid');
      kv(grid, 'requested', fmtBytes(o.requested_bytes) + (o.rounded_bytes && o.rounded_bytes !== o.requested_bytes ? ' (rounded ' + fmtBytes(o.rounded_bytes) + ')' : ''));
      kv(grid, 'allocated', fmtBytes(o.allocated_bytes));
      kv(grid, 'reserved', fmtBytes(o.reserved_bytes));
      if (o.capacity_inferred) {
        kv(grid, 'capacity (inferred)', fmtBytes(o.capacity_lower_bytes) + ' \u2013 ' + fmtBytes(o.capacity_upper_bytes));
      } else {
        kv(grid, 'capacity', o.capacity_bytes ? fmtBytes(o.capacity_bytes) : 'unknown');
      }
      kv(grid, 'reserved but unallocated', fmtBytes(o.reserved_bytes - o.allocated_bytes));
      kv(grid, 'free inside segments', fmtBytes(o.free_in_reserved_bytes));
      kv(grid, 'largest free block', fmtBytes(o.largest_free_bytes));
      if (o.device_free_bytes !== null && o.device_free_bytes !== undefined) {
        /* the device's free bytes beside a failed request: say which limit stopped it */
        var want = o.rounded_bytes || o.requested_bytes || 0;
        kv(grid, 'device free', fmtBytes(o.device_free_bytes) + (o.device_free_bytes >= want
          ? ' \u2014 enough for the request: the per-process cap stopped it, not the device'
          : ' \u2014 less than the request: the device itself was full'));
      }
      card.appendChild(grid);
      if (o.explanation) card.appendChild(el('p', 'explain', o.explanation));

      if (o.segments && o.segments.length) {
        card.appendChild(el('h4', null, 'Segments holding the most free space, and the live blocks pinning them'));
        var rows = [];
        o.segments.forEach(function (s) {
          rows.push([{ cls: 'l', text: fmtAddr(s.segment) }, { text: fmtBytes(s.size_bytes) }, { text: fmtBytes(s.free_bytes) },
            { text: fmtBytes(s.largest_free_bytes) }, { cls: 'l', text: '' }, { text: '' }, { cls: 'tag', text: plural((s.pinning_blocks || []).length, 'pinning block') }]);
          (s.pinning_blocks || []).forEach(function (p) {
            rows.push([{ cls: 'l', text: '' }, { text: '' }, { text: '' }, { text: '' },
              { cls: 'l', text: fmtAddr(p.addr) + ' \u00b7 ' + fmtBytes(p.size_bytes) },
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
        tagTable(t2, o.tags, o.allocated_bytes, '');
        var w2 = el('div', 'table-wrap'); w2.appendChild(t2); card.appendChild(w2);
      }
      card.appendChild(el('h4', null, 'What-if suggestions'));
      if (o.suggestions && o.suggestions.length) {
        var t3 = el('table', 'data');
        /* settings break only after a comma, notes wrap: nothing is cut */
        table(t3, [['configuration', 'l'], ['capacity needed'], ['serves the failed request', 'l'], ['note', 'l']], o.suggestions.map(function (s) {
          return [{ cls: 'cfg', text: (s.config || '(defaults)').replace(/,/g, ',\u200b') }, { text: s.needed_capacity ? fmtBytes(s.needed_capacity) : '\u2014' },
            { cls: 'l', text: s.avoids ? 'yes' : 'no' }, { cls: 'note-cell', text: s.note || '' }];
        }));
        t3.classList.add('whatif');
        var w3 = el('div', 'table-wrap'); w3.appendChild(t3); card.appendChild(w3);
      } else {
        card.appendChild(el('p', 'empty', 'No what-if results in this database (fragscope whatif fills them).'));
      }
      card.appendChild(oomBar(o));
      if (fsc.openState && D.state && D.state.windows && D.state.windows.length) {
        var sb = el('button', null, 'Open the allocator state at this OOM');
        sb.type = 'button';
        sb.addEventListener('click', function () { fsc.openState(o.seq); });
        card.appendChild(sb);
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

  fsc.renderBins = renderBins;
  fsc.renderTags = renderTags;
  fsc.renderOoms = renderOoms;
})(window.fsc);
