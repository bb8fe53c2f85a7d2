#!/usr/bin/env bash
# Install fragscope's build dependencies (Debian) and build it into build/.
# Usage: scripts/setup.sh [--sanitize]   (--sanitize builds build-asan/ instead)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs="build-essential cmake pkg-config libzstd-dev libsqlite3-dev libcjson-dev libcunit1-dev libbsd-dev uthash-dev sqlite3 python3 chromium"
# Packaging and the install tests: cpack -G DEB (dpkg-dev, file), the man page
# (groff-base), the Python package built offline (venv, pip, setuptools, wheel).
pkgs="$pkgs dpkg-dev file groff-base python3-venv python3-pip python3-setuptools python3-wheel"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
dir=build; flags=()
if [ "${1:-}" = "--sanitize" ]; then dir=build-asan; flags=(-DFSC_SANITIZE=ON -DFSC_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug); fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
