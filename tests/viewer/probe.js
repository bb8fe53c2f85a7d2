/*
 * probe.js — appended to a report by test_viewer_browser.c: drives the
 * charts with synthetic wheel, pointer and click events and writes what
 * happened into a new pre element (id "probe"), one "name=value" line each.
 */
(function () {
  'use strict';
  var out = document.createElement('pre');
  out.id = 'probe';
  document.body.appendChild(out);
  function log(k, v) { out.textContent += k + '=' + v + '\n'; }
  function plot(svg) {
    var r = svg.getBoundingClientRect(), p = svg.getAttribute('data-plot').split(' ');
    return { left: r.left + Number(p[0]), width: Number(p[1]), mid: r.top + r.height / 2 };
  }
  function at(svg, type, x, y, id) {
    svg.dispatchEvent(new PointerEvent(type, { clientX: x, clientY: y, pointerId: id || 1, bubbles: true }));
  }
  try {
    var v = window.fscView, full = v.full1 - v.full0;
    var mem = document.getElementById('chart-memory'), p = plot(mem);
    for (var i = 0; i < 5; i++)
      mem.dispatchEvent(new WheelEvent('wheel', { deltaY: -100, clientX: p.left + p.width / 2,
        clientY: p.mid, bubbles: true, cancelable: true }));
    log('zoom_span', ((v.x1 - v.x0) / full).toFixed(4));
    var x0 = v.x0, span = v.x1 - v.x0;
    at(mem, 'pointerdown', p.left + 300, p.mid);
    at(mem, 'pointermove', p.left + 200, p.mid);
    at(mem, 'pointerup', p.left + 200, p.mid);
    log('pan_shift', ((v.x0 - x0) / (span * 100 / p.width)).toFixed(3));
    mem.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    log('reset', v.x0 === v.full0 && v.x1 === v.full1 ? 'yes' : 'no');
    mem.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    mem.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    log('keys', ((v.x0 - v.full0) / full).toFixed(3) + '..' + ((v.x1 - v.full0) / full).toFixed(3));
    mem.dispatchEvent(new KeyboardEvent('keydown', { key: '0', bubbles: true }));
    var t = function (ns) { return p.left + (ns - v.x0) / (v.x1 - v.x0) * p.width; };
    at(mem, 'pointermove', t(1.3e9), p.mid);
    log('tip_peak', document.getElementById('tip-memory').textContent);
    at(mem, 'pointermove', t(2.4e9), p.mid);
    log('tip_oom', document.getElementById('tip-memory').textContent);
    var brush = document.getElementById('chart-brush'), b = plot(brush);
    at(brush, 'pointerdown', b.left + b.width * 0.25, b.mid, 2);
    at(brush, 'pointermove', b.left + b.width * 0.5, b.mid, 2);
    at(brush, 'pointerup', b.left + b.width * 0.5, b.mid, 2);
    log('brush', ((v.x0 - v.full0) / full).toFixed(3) + '..' + ((v.x1 - v.full0) / full).toFixed(3));
    var blk = document.querySelector('#segmap rect.blk'), bb = blk.getBoundingClientRect();
    at(blk, 'pointermove', bb.left + 2, bb.top + 2);
    log('tip_block', document.getElementById('tip-seg').textContent);
    var radio = document.querySelector('input[name="seg-colour"][value="tag"]');
    radio.checked = true;
    radio.dispatchEvent(new Event('change'));
    log('legend_tags', document.getElementById('legend-seg').textContent);
    var order = document.getElementById('seg-order');
    order.value = 'size';
    order.dispatchEvent(new Event('change'));
    var rows = document.querySelectorAll('#segmap g.seg');
    log('order_size', Array.prototype.map.call(rows, function (g) {
      return g.querySelector('text').textContent;
    }).join(','));
    var card = document.querySelector('.oom-card');
    log('oom_grid', card.querySelector('.oom-grid').textContent);
    log('oom_segments', Array.prototype.map.call(card.querySelectorAll('table')[0].querySelectorAll('tr'),
      function (tr) { return tr.textContent; }).join('|'));
    document.querySelector('.oom-card button').click();
    log('layout', document.getElementById('seg-layout').value + ' ' + document.getElementById('seg-summary').textContent);
  } catch (e) {
    log('error', e && e.stack ? e.stack : String(e));
  }
})();
