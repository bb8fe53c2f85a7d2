/*
 * viewer_main.js — draws the page from the parts the other viewer_*.js
 * files add to window.fsc, links them (a band or an OOM opens the state
 * view; the state view feeds the stacks view) and follows the page's
 * anchors: #timeline, #state, #stacks, #oom-N, and #state?event=N, which
 * opens the state after event N. A part that fails reports into #js-errors
 * and the others still draw; body[data-rendered] says the script ran to the
 * end.
 */
(function (fsc) {
  'use strict';
  var costs = [];
  /* On a job page: "run-N/", what this run's anchors start with. */
  var PREFIX = window.fscHashPrefix || '';
  function guarded(name, fn) {
    var t0 = window.performance ? performance.now() : 0;
    try { return fn(); } catch (e) {
      window.fscNoteError(name + ': ' + (e && e.stack ? e.stack : String(e)));
      return null;
    } finally {
      if (window.performance) costs.push(name + ' ' + (performance.now() - t0).toFixed(1));
    }
  }
  var state = guarded('state view', function () { return new fsc.StateView(); });
  var stacks = guarded('stacks', function () { return new fsc.Stacks(state); });
  fsc.onStateChange = function () { if (stacks) guarded('stacks', function () { stacks.refreshChosen(); }); };

  function scrollTo(id) {
    var e = document.getElementById(id);
    if (e && e.scrollIntoView) e.scrollIntoView();
  }
  /* Open the state after event N (and say so in the address). */
  fsc.openState = function (N, highlight) {
    if (!state || !state.model) return null;
    var r = state.show(N, highlight);
    if (window.history && window.history.replaceState) {
      try { window.history.replaceState(null, '', '#' + PREFIX + 'state?event=' + Math.round(N)); } catch (e) { /* file:// may refuse */ }
    }
    scrollTo('state');
    return r;
  };
  /* Open a band's block: at the clicked event when it is carried and the
   * block is live there, else at the carried event of its life nearest to it. */
  fsc.openBlock = function (a, end, at) {
    if (!state || !state.model) return null;
    var M = state.model, want = Math.max(a, Math.min(end - 1, at)), best = null, dist = Infinity;
    M.windows.forEach(function (w) {
      var lo = Math.max(w[0], a), hi = Math.min(w[1], end - 1);
      if (lo > hi) return;
      var e = Math.max(lo, Math.min(hi, want)), d = Math.abs(e - want);
      if (d < dist) { dist = d; best = e; }
    });
    var r = fsc.openState(best !== null ? best : want, a);
    if (best === null) {
      var note = document.getElementById('state-note');
      note.textContent += ' The block of this band (allocated at event ' + a + ') is not live in any event the page carries.';
    }
    return r;
  };
  /* "#state?event=N", "#oom-3", "#stacks" ... (on a job page also after
   * the run shown: "#run-2/state?event=N"; another run's are not ours) */
  fsc.route = function (hash) {
    if (/^#run-\d+/.test(hash || '')) {
      if (!PREFIX || hash.indexOf('#' + PREFIX) !== 0) return null;
      hash = '#' + hash.slice(PREFIX.length + 1);
    }
    var m = /^#state\?(?:.*&)?event=(\d+)/.exec(hash || '');
    if (m && state && state.model) {
      state.show(Number(m[1]));
      scrollTo('state');
      return 'state';
    }
    var id = (hash || '').replace(/^#/, '').replace(/\?.*$/, '');
    if (id && /^[a-z0-9-]+$/.test(id)) scrollTo(id);
    return id;
  };

  guarded('active memory timeline', function () { fsc.bands = new fsc.Bands(); });
  guarded('time charts', fsc.renderTimeViews);
  var segmap = guarded('segment map', function () { return new fsc.SegmentMap(); });
  guarded('OOM panel', function () { fsc.renderOoms(segmap); });
  guarded('bins', fsc.renderBins);
  guarded('tags', fsc.renderTags);
  fsc.stateView = state;
  fsc.stacks = stacks;
  fsc.onWindow('hashchange', function () { guarded('anchor', function () { fsc.route(location.hash); }); });
  guarded('anchor', function () { fsc.route(window.fscFirstHash !== undefined ? window.fscFirstHash : location.hash); });
  /* Milliseconds from the start of navigation until everything is drawn
   * (bench/bench_viewer.sh reads it). */
  if (window.performance && performance.now) {
    document.body.setAttribute('data-render-ms', performance.now().toFixed(1));
    document.body.setAttribute('data-part-ms', costs.join('; '));
    /* and until the first frame with all of it laid out and painted */
    if (window.requestAnimationFrame) window.requestAnimationFrame(function () {
      document.body.setAttribute('data-frame-ms', performance.now().toFixed(1));
    });
  }
  document.body.setAttribute('data-rendered', 'yes');
})(window.fsc);
