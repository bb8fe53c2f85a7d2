/*
 * viewer_main.js — draws the page from the parts the other viewer_*.js
 * files add to window.fsc. A part that fails reports into #js-errors and
 * the others still draw; body[data-rendered] says the script ran to the end.
 */
(function (fsc) {
  'use strict';
  function guarded(name, fn) {
    try { return fn(); } catch (e) {
      window.fscNoteError(name + ': ' + (e && e.stack ? e.stack : String(e)));
      return null;
    }
  }
  guarded('time charts', fsc.renderTimeViews);
  var segmap = guarded('segment map', function () { return new fsc.SegmentMap(); });
  guarded('OOM panel', function () { fsc.renderOoms(segmap); });
  guarded('bins', fsc.renderBins);
  guarded('tags', fsc.renderTags);
  document.body.setAttribute('data-rendered', 'yes');
})(window.fsc);
