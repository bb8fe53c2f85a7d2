#!/usr/bin/env bash
# Write what every command prints and writes for the shipped inputs into DIR,
# so that two builds can be compared with `diff -r`: a change meant to keep
# behaviour shows no difference. Databases are dumped as SQL text.
# Usage: scripts/snapshot-outputs.sh FRAGSCOPE_BINARY DIR
set -u
bin=$(realpath "$1"); out=$2
cd "$(dirname "$0")/.."
rm -rf "$out"; mkdir -p "$out"; out=$(realpath "$out")
export FRAGSCOPE_NO_PROGRESS=1
inputs="sample_traces/*.fstrace sample_traces/*.pickle tests/data/pytorch/*.pickle tests/data/pytorch/*.json tests/data/*.fstrace"
for f in $inputs; do
  case $f in *.stats.json) continue;; esac
  n=$(echo "$f" | tr '/' '_')
  d=$out/$n; mkdir -p "$d"
  "$bin" info "$f" > "$d/info.txt" 2>&1; echo "rc=$?" >> "$d/info.txt"
  "$bin" analyze "$f" -o "$d/run.db" > "$d/analyze.txt" 2>&1; echo "rc=$?" >> "$d/analyze.txt"
  if [ -f "$d/run.db" ]; then
    sqlite3 "$d/run.db" .dump | grep -v "source_path\|created_at\|fragscope_version" > "$d/run.sql"
    for fmt in text json markdown; do "$bin" report "$d/run.db" --format $fmt > "$d/report.$fmt" 2>&1; done
    "$bin" check "$d/run.db" --no-oom --max-peak-reserved 18GiB > "$d/check.txt" 2>&1; echo "rc=$?" >> "$d/check.txt"
    "$bin" view "$d/run.db" -o "$d/view.html" > "$d/view.txt" 2>&1
    rm -f "$d/run.db"
  fi
  "$bin" whatif "$f" --verify --format json > "$d/verify.json" 2>&1; echo "rc=$?" >> "$d/verify.json"
  "$bin" whatif "$f" --config "" --config expandable_segments:True --capacity 14GiB --format json > "$d/whatif.json" 2>&1
  "$bin" export "$f" --pytorch-snapshot "$d/export.pickle" > "$d/export.txt" 2>&1; echo "rc=$?" >> "$d/export.txt"
done
# Paths of this checkout and of DIR are replaced so that two checkouts and
# two output folders compare equal.
grep -rlF -e "$out" -e "$PWD" "$out" 2>/dev/null | xargs -r sed -i "s#$out#OUT#g; s#$PWD#SRC#g"
echo "outputs in $out"
