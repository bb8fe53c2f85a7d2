#!/usr/bin/env bash
# Rewrites the settings list of docs/allocator.md (between the
# settings-table markers) from the settings table, allocator/settings.c,
# through fsc_alloc_settings_doc. Needs a configured build in ./build
# (cmake -S . -B build && cmake --build build --target fsc_allocator).
# tests/test_settings_table.c fails while the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/gen.c" <<'C'
#include <stdio.h>
#include "fragscope/allocator.h"
int main(void)
{
    static char b[1 << 16];
    int rc = fsc_alloc_settings_doc(b, sizeof b);
    fputs(b, stdout);
    return rc != 0;
}
C
cc -Iinclude -I"$build/include" "$tmp/gen.c" "$build/allocator/libfsc_allocator.a" \
    "$build/common/libfsc_common.a" -lpthread -o "$tmp/gen"
"$tmp/gen" >"$tmp/table.md"
python3 - "$tmp/table.md" <<'PY'
import sys
doc = "docs/allocator.md"
s = open(doc).read()
b, e = "<!-- settings-table:begin -->\n", "<!-- settings-table:end -->"
i, j = s.index(b) + len(b), s.index(e)
new = s[:i] + open(sys.argv[1]).read() + s[j:]
tmp = doc + ".tmp"
open(tmp, "w").write(new)
import os
os.replace(tmp, doc)
PY
echo "docs/allocator.md: settings list rewritten"
