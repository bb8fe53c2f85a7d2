/*
 * probe_runs.js — appended to a job report by tests/test_viewer_runs.c. It
 * reads what the page shows for the run it opened with, then (when
 * window.FSC_PROBE_PICK is set) picks every run of the rank picker in turn
 * as a user would (the select's change event) and reads the detail again,
 * writing "name=value" lines into the probe box (pre#probe).
 */
(function () {
  'use strict';
  var out = [];
  function put(k, v) { out.push(k + '=' + String(v).replace(/\n/g, ' ')); }
  function text(sel) { var e = document.querySelector(sel); return e ? e.textContent : '(none)'; }
  /* What the detail shows: the run, its peaks (static summary and the data
   * the charts draw), its OOM cards, the drawn views. */
  function read(name) {
    var D = window.fsc.D, S = D.summary || {};
    var state = document.getElementById('statemap');
    put(name, [document.body.getAttribute('data-run'), document.body.getAttribute('data-rendered'),
      text('#sum-peak-allocated .value'), text('#sum-peak-reserved .value'), text('#summary h2'),
      S.peak_allocated_bytes, S.peak_reserved_bytes,
      document.querySelectorAll('#oom-list .oom-card').length,
      document.querySelectorAll('#chart-memory path.series').length,
      state ? state.getAttribute('data-event') : '-',
      document.querySelectorAll('.run-card.current').length,
      text('.run-card.current .run-label'),
      document.getElementById('run-pick').value,
      document.getElementById('js-errors').textContent.length].join('|'));
  }
  try {
    read('first');
    put('oom0', document.getElementById('oom-0') ? 'yes' : 'no');
    put('note', text('#run-note'));
    if (window.FSC_PROBE_PICK) {
      var pick = document.getElementById('run-pick');
      var values = [];
      for (var i = 0; i < pick.options.length; i++) values.push(pick.options[i].value);
      put('options', values.join(','));
      values.concat([values[0]]).forEach(function (v, k) {
        pick.value = v;
        pick.dispatchEvent(new Event('change'));
        read('pick' + k);
      });
      /* An anchor of the run shown, after picking. */
      window.fsc.route('#state?event=7');
      put('state_after_pick', document.getElementById('statemap').getAttribute('data-event'));
      put('listeners', (window.fscWindowListeners || []).length);
    }
  } catch (e) {
    put('error', e && e.stack ? e.stack : String(e));
  }
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = out.join('\n') + '\n';
  document.body.appendChild(pre);
})();
