/*
 * probe_state.js — appended to a report by tests/test_viewer_state.c. It
 * opens the events listed in window.FSC_PROBE_EVENTS through the page's own
 * anchor handling (#state?event=N), reads the live blocks back from the
 * drawn segment map, hovers the bands listed in window.FSC_PROBE_BANDS, and
 * writes "name=value" lines into the probe box (pre#probe).
 */
(function () {
  'use strict';
  var out = [];
  function put(k, v) { out.push(k + '=' + String(v).replace(/\n/g, ' ')); }
  try {
    var fsc = window.fsc;
    (window.FSC_PROBE_EVENTS || []).forEach(function (N) {
      fsc.route('#state?event=' + N);
      var svg = document.getElementById('statemap'), live = [];
      svg.querySelectorAll('rect[data-alloc]').forEach(function (r) {
        live.push(Number(r.getAttribute('data-alloc')) + (r.getAttribute('data-state') === 'pending' ? 'p' : 'a'));
      });
      live.sort(function (x, y) { return parseInt(x, 10) - parseInt(y, 10); });
      put('ev' + N, svg.getAttribute('data-event') + ' ' + svg.getAttribute('data-exact') + ' ' + live.join(','));
      if (svg.getAttribute('data-exact') !== 'yes') put('note' + N, document.getElementById('state-note').textContent);
    });
    var B = fsc.bands;
    (window.FSC_PROBE_BANDS || []).forEach(function (k) {
      if (!B || k >= B.count) return;
      var p = B.locate(k), canvas = document.getElementById('bands');
      canvas.dispatchEvent(new PointerEvent('pointermove', { clientX: p.x, clientY: p.y, bubbles: true }));
      var tip = document.getElementById('tip-bands');
      put('band' + k, B.block(k).a + ' ' + tip.textContent);
      /* A click opens the state with this block highlighted. */
      canvas.dispatchEvent(new PointerEvent('pointerdown', { clientX: p.x, clientY: p.y, bubbles: true }));
      canvas.dispatchEvent(new PointerEvent('pointerup', { clientX: p.x, clientY: p.y, bubbles: true }));
      var hl = document.querySelector('#statemap rect.hl');
      put('click' + k, hl ? hl.getAttribute('data-alloc') + ' at ' + document.getElementById('statemap').getAttribute('data-event') : 'none');
    });
    if (fsc.stacks) {
      var sel = document.getElementById('stacks-at');
      put('stacks_choices', sel.options.length);
      put('stacks_frames', document.getElementById('stacksvg').getAttribute('data-frames'));
    }
  } catch (e) {
    put('error', e && e.stack ? e.stack : String(e));
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = out.join('\n') + '\n';
  document.body.appendChild(pre);
})();
