/*
 * probe_oom.js — appended to a report by tests/test_viewer_oom.c, at each
 * window width the test loads. It measures the page (wider than the window?
 * network requests?) and, when window.FSC_PROBE_FULL is set, drives what an
 * engineer who just hit an OOM uses: the verdict, the table of live bytes by
 * line of code and its switch, the leaf-first icicle from the keyboard, Page
 * Up / Page Down on the state view's slider, text in the event field, the
 * marker labels and where a chart's tooltip lands. It writes "name=value"
 * lines into pre#probe.
 */
(function () {
  'use strict';
  var out = [];
  function put(k, v) { out.push(k + '=' + String(v).replace(/\n/g, ' ')); }
  var errors = [];
  /* Each part runs on its own, so one that fails (an older page lacks the
   * element) does not hide what the others find. */
  function part(name, fn) {
    try { fn(); } catch (e) { errors.push(name + ': ' + (e && e.stack ? e.stack : String(e))); }
  }
  function key(target, k) {
    target.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
  }
  try {
    var de = document.documentElement;
    put('width', de.scrollWidth + ' ' + de.clientWidth);
    /* elements wider than the window, for the message when it fails */
    var wide = [];
    document.querySelectorAll('main *').forEach(function (e) {
      var r = e.getBoundingClientRect();
      if (r.right > de.clientWidth + 1 && wide.length < 3) {
        var p = e.parentElement ? e.parentElement.getBoundingClientRect() : null;
        if (!p || p.right <= de.clientWidth + 1) wide.push(e.tagName + '#' + e.id + '.' + e.className);
      }
    });
    put('wide', wide.join(' '));
    put('resources', window.performance && performance.getEntriesByType ? performance.getEntriesByType('resource').length : -1);
    /* the what-if tables fit their card: nothing is cut or scrolled away */
    var clipped = 0;
    document.querySelectorAll('table.whatif').forEach(function (t) {
      if (t.parentNode.scrollWidth > t.parentNode.clientWidth + 1) clipped++;
    });
    put('whatif_clipped', clipped);

    if (window.FSC_PROBE_FULL) {
      var fsc = window.fsc;
      part('verdict', function () {
      /* The verdict is the first thing in the summary. */
      var sum = document.getElementById('summary'), v = document.getElementById('verdict');
      put('verdict_first', v && sum.children[1] === v ? 'yes' : 'no');
      put('verdict', v ? v.textContent : '');
      var facts = document.getElementById('run-facts'), cap = '';
      if (facts) facts.querySelectorAll('tr').forEach(function (r) {
        if (r.firstChild.textContent === 'capacity') cap = r.lastChild.textContent;
      });
      put('facts_capacity', cap);
      var card = document.querySelector('.oom-card .oom-grid');
      put('card_capacity', card ? card.textContent.replace(/^[\s\S]*capacity[^:]*: ([^\n]*?)reserved but[\s\S]*$/, '$1') : '');
      put('card_device', card ? card.textContent : '');
      var text = document.body.innerText;
      /* "leak" only where the page says it cannot tell */
      put('says_leak', /\bleak(s)?\b/i.test(text.replace(/nothing of a leak|is a leak/gi, '')) ? 'yes' : 'no');
      put('says_external_fragmentation', /external fragmentation/i.test(text) ? 'yes' : 'no');
      put('end_split', (document.getElementById('end-split') || {}).textContent || '');
      });
      part('lines', function () {

      /* Live bytes by line of code. */
      function rows() {
        var r = [];
        document.querySelectorAll('#sites-table tr.site').forEach(function (tr) {
          r.push(tr.getAttribute('data-site') + '\t' + tr.getAttribute('data-bytes'));
        });
        return r;
      }
      var table = document.getElementById('sites-table');
      put('sites_total', table.getAttribute('data-total'));
      put('sites_count', table.getAttribute('data-sites'));
      put('sites', rows().join('|'));
      var mine = document.getElementById('stacks-mine');
      mine.checked = true;
      mine.dispatchEvent(new Event('change', { bubbles: true }));
      put('mine_total', table.getAttribute('data-total'));
      put('mine_sites', rows().join('|'));
      mine.checked = false;
      mine.dispatchEvent(new Event('change', { bubbles: true }));

      /* The leaf-first icicle, from the keyboard. */
      var svg = document.getElementById('stacksvg'), dir = document.getElementById('stacks-dir');
      dir.value = 'leaf';
      dir.dispatchEvent(new Event('change', { bubbles: true }));
      put('icicle_order', svg.getAttribute('data-order'));
      svg.focus();
      key(svg, 'ArrowDown');
      put('key_down', svg.getAttribute('data-selected'));
      key(svg, 'ArrowRight');
      put('key_right', svg.getAttribute('data-selected'));
      key(svg, 'ArrowDown');
      put('key_down2', svg.getAttribute('data-selected'));
      var before = svg.getAttribute('data-frames');
      key(svg, 'Enter');
      put('key_enter', before + ' ' + svg.getAttribute('data-frames') + ' ' + (svg.querySelector('rect.frame') || { getAttribute: function () { return ''; } }).getAttribute('data-label'));
      put('sel_text', document.getElementById('stacks-sel').textContent);
      key(svg, 'Home');
      /* root first: the first row under the top bar is the outermost frame */
      dir.value = 'root';
      dir.dispatchEvent(new Event('change', { bubbles: true }));
      put('root_order', svg.getAttribute('data-order'));
      });
      part('state', function () {

      /* Page Down / Page Up: a hundred events, the same on the slider as on the section. */
      var sv = fsc.stateView, range = document.getElementById('state-range'), field = document.getElementById('state-event');
      var map = document.getElementById('statemap');
      if (sv && sv.model) {
        var start = Math.min(200, Math.max(0, sv.model.events - 400));
        put('events', sv.model.events);
        sv.show(start);
        key(range, 'PageDown');
        var a = map.getAttribute('data-event');
        key(document.getElementById('state-next'), 'PageDown');
        var b = map.getAttribute('data-event');
        key(range, 'PageUp');
        var c = map.getAttribute('data-event');
        put('pagedown', start + ' ' + a + ' ' + b + ' ' + c);
        /* text the field cannot show is refused; the state stays */
        ['abc', '12.5', '-3', '99999999'].forEach(function (t, i) {
          field.value = t;
          field.dispatchEvent(new Event('change', { bubbles: true }));
          put('field' + i, JSON.stringify(t) + ' ' + map.getAttribute('data-event') + ' ' + field.value + ' ' +
            (field.getAttribute('aria-invalid') || 'valid') + ' ' + document.getElementById('state-note').textContent);
        });
        /* each event names the snapshot's history entry behind it */
        var o0 = (window.fsc.D.ooms || [])[0];
        if (o0) {
          sv.show(o0.seq);
          put('entry_oom', map.getAttribute('data-entry'));
          var h = document.querySelector('.oom-card h3');
          put('entry_card', h ? h.textContent : '');
        }
        field.value = String(start + 7);
        field.dispatchEvent(new Event('change', { bubbles: true }));
        put('field_ok', map.getAttribute('data-event') + ' ' + (field.getAttribute('aria-invalid') || 'valid'));
      }
      });
      part('markers', function () {

      /* Marker labels on the timeline canvas and on the memory chart. */
      put('memory_series', document.querySelectorAll('#chart-memory path.series').length);
      put('pool_note', document.getElementById('pool-note') ? document.getElementById('pool-note').textContent : '');
      put('marker_labels', (document.getElementById('bands').getAttribute('data-marker-labels') || '0') + ' ' +
        document.querySelectorAll('#chart-memory .marker text').length + ' ' + (window.fsc.D.markers || []).length);
      });
      part('tooltip', function () {

      /* A tooltip over the memory chart does not cover the chart. */
      var chart = document.getElementById('chart-memory'), box = chart.getBoundingClientRect();
      chart.dispatchEvent(new PointerEvent('pointermove', { clientX: box.left + box.width * 0.6, clientY: box.top + box.height * 0.5, bubbles: true }));
      var tip = document.getElementById('tip-memory'), tb = tip.getBoundingClientRect();
      put('tip', (tip.style.display === 'block' ? 'shown' : 'hidden') + ' ' + Math.round(tb.top) + ' ' + Math.round(box.bottom));
      });
    }
  } catch (e) {
    errors.push(e && e.stack ? e.stack : String(e));
  }
  if (errors.length) put('error', errors.join(' | '));
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = out.join('\n') + '\n';
  document.body.appendChild(pre);
})();
