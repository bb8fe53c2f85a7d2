#!/bin/sh
# screenshot.sh — a screenshot of one view of a report in headless Chromium
# (for docs/viewer.md): every other section of the page is hidden, so the
# view is drawn at the top of the window.
#
# usage: screenshot.sh REPORT.html SECTION_ID OUT.png [HASH] [WIDTH,HEIGHT]
# e.g.   screenshot.sh run.html state docs/viewer-state.png '#state?event=81858'
set -eu
html=$1
id=$2
out=$3
hash=${4:-}
size=${5:-1400,900}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fsc-shot-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# (the views of a run sit in div#detail, below a job's overview)
style="<style>header.top, footer.foot, main > *:not(#$id):not(#detail), #detail > *:not(#$id) { display: none !important; } main { padding-top: 8px; }</style>"
sed "s|</head>|$style</head>|" "$html" > "$tmp/page.html"
FSC_WINDOW=$size sh "$here/chromium_dump.sh" "$tmp/page.html$hash" "$tmp/page.dom" "$out"
