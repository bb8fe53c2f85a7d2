#!/bin/sh
# chromium_dump.sh — load an HTML report in headless Chromium, offline, and
# write the DOM after the page's scripts ran (and optionally a screenshot).
#
# usage: chromium_dump.sh REPORT.html OUT.dom [SCREENSHOT.png]
# Exit status: 0 done, 77 Chromium is not installed (callers skip), other
# values: Chromium failed (its log is in OUT.dom.log).
set -u
html=$1
dom=$2
shot=${3:-}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
    exit 77
fi
profile=$(mktemp -d "${TMPDIR:-/tmp}/fsc-chromium-XXXXXX") || exit 1
trap 'rm -rf "$profile"' EXIT
# No network of any kind: everything the page needs is inline, and the
# page's own Content-Security-Policy reports any request it would attempt.
set -- --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-default-apps --disable-extensions --no-default-browser-check --disable-dev-shm-usage \
    --user-data-dir="$profile" --window-size=${FSC_WINDOW:-1400,2000} --hide-scrollbars \
    --enable-logging=stderr --v=0
# An anchor after the file name ("report.html#run-2/oom-1") stays out of
# the path arithmetic.
file=${html%%#*}
anchor=${html#"$file"}
url="file://$(cd "$(dirname "$file")" && pwd)/$(basename "$file")$anchor"
timeout 90 "$browser" "$@" --dump-dom "$url" > "$dom" 2> "$dom.log"
rc=$?
if [ $rc -ne 0 ]; then
    exit $rc
fi
if [ -n "$shot" ]; then
    timeout 90 "$browser" "$@" --screenshot="$shot" "$url" >> "$dom.log" 2>&1 || exit $?
fi
exit 0
