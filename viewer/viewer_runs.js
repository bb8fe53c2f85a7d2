/*
 * viewer_runs.js — the rank picker of a job page. A one-run page has no
 * picker: this only runs the page's scripts (window.fscBoot) once.
 *
 * A job page is the page of one run with the overview of all runs above it
 * and, for the other runs it carries, their static summary in
 * a template element (static-run-N) and their data in the JSON block data-run-N.
 * Showing run N puts a fresh copy of the detail as the page was written
 * (#detail, kept before the first drawing) in place, with run N's summary
 * and split sections from its template, takes the previous run's window
 * listeners off, and runs the scripts again on run N's data, so every view
 * is that run's. Anchors: #run-N shows run N; #run-N/ANCHOR is ANCHOR
 * (#state?event=E, #oom-K, #stacks, ...) within run N; an anchor without a
 * run is within the run shown.
 */
(function () {
  'use strict';
  var pick = document.getElementById('run-pick');
  if (!pick) { window.fscBoot(); return; }

  var detail = document.getElementById('detail');
  var pristine = detail.cloneNode(true);
  var first = Number(pick.getAttribute('data-default'));
  var note = document.getElementById('run-note');
  var current = null;

  function carried(n) {
    for (var i = 0; i < pick.options.length; i++) if (Number(pick.options[i].value) === n) return true;
    return false;
  }
  function parse(hash) {
    var m = /^#run-(\d+)(?:\/(.*))?$/.exec(hash || '');
    return m ? { run: Number(m[1]), rest: m[2] ? '#' + m[2] : '' } : null;
  }
  function swapStatic(root, n) {
    var t = document.getElementById('static-run-' + n);
    if (!t) return;
    var parts = t.content.cloneNode(true);
    ['summary', 'split'].forEach(function (id) {
      var fresh = parts.querySelector('#' + id), old = root.querySelector('#' + id);
      if (fresh && old) old.parentNode.replaceChild(fresh, old);
    });
  }
  function label(n) {
    var card = document.getElementById('run-card-' + n), l = card && card.querySelector('.run-label');
    return l ? l.textContent : 'run ' + n;
  }
  function scrollTo(id) {
    var e = document.getElementById(id);
    if (e && e.scrollIntoView) e.scrollIntoView();
  }
  /* Show run n, then go to anchor rest within it ('' = none). */
  function show(n, rest) {
    if (n !== current) {
      (window.fscWindowListeners || []).forEach(function (l) { window.removeEventListener(l[0], l[1]); });
      window.fscWindowListeners = [];
      var fresh = current === null ? detail : pristine.cloneNode(true);
      if (n !== first) swapStatic(fresh, n);
      if (fresh !== detail) { detail.parentNode.replaceChild(fresh, detail); detail = fresh; }
      window.fscDataId = n === first ? 'data' : 'data-run-' + n;
      window.fscHashPrefix = 'run-' + n + '/';
      window.fscFirstHash = rest;
      document.body.removeAttribute('data-rendered');
      current = n;
      window.fscBoot();
      /* Say whose detail this is where it starts. */
      var h2 = detail.querySelector('#summary h2');
      if (h2) h2.textContent = 'Summary of ' + label(n);
      pick.value = String(n);
      var cards = document.querySelectorAll('.run-card');
      for (var i = 0; i < cards.length; i++) {
        var on = Number(cards[i].getAttribute('data-run')) === n;
        cards[i].classList.toggle('current', on);
        if (on) cards[i].setAttribute('aria-current', 'true'); else cards[i].removeAttribute('aria-current');
      }
      document.body.setAttribute('data-run', String(n));
    } else if (rest && window.fsc && window.fsc.route) {
      window.fsc.route('#run-' + n + '/' + rest.slice(1));
    }
  }
  /* A run the page does not carry: say how to get it, show the first. */
  function missing(n) {
    note.textContent = label(n) + ' (run ' + n + ') has no detail in this page: write one that carries it with ' +
      'fragscope view ' + (pick.getAttribute('data-db') || 'JOB.db') + ' --runs ' + n + '.';
  }
  function follow(hash, scroll) {
    var h = parse(hash);
    note.textContent = '';
    if (!h) {
      if (current === null) show(first, hash);
      return;
    }
    if (!carried(h.run)) {
      missing(h.run);
      if (current === null) show(first, '');
      scrollTo('run-card-' + h.run);
      return;
    }
    show(h.run, h.rest);
    if (scroll && !h.rest) scrollTo('run-bar');
  }

  pick.addEventListener('change', function () {
    var n = Number(pick.value);
    note.textContent = '';
    show(n, '');
    try { window.history.pushState(null, '', '#run-' + n); } catch (e) { /* file:// may refuse */ }
  });
  window.addEventListener('hashchange', function () { follow(location.hash, true); });
  follow(location.hash, true);
  window.fscShowRun = show; /* for the console and tests */
})();
