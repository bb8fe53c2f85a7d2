#!/usr/bin/env bash
# run.sh STEP SOURCE_DIR BUILD_DIR TMP — one step of test_install: what a
# user of each audience does with an installed fragscope.
#   prefix     cmake --install into TMP/prefix; files present; libfragscope.so
#              exports only fsc_* functions declared in include/fragscope/
#   cmake      a project using find_package(fragscope), shared and static
#   pkgconfig  a program built with pkg-config --cflags --libs fragscope
#   man        the installed man page: one section per command, no roff warning
#   deb        cpack -G DEB; dpkg-deb -I/-c; unpacked into a scratch root, the
#              command runs and a program builds against it with pkg-config
#   python     pip install of python/ into a fresh venv: the fragscope command,
#              python -m fragscope_torch, the message when there is no CUDA, and
#              python -m fragscope_torch record finding the package's files
# Exit 0 ok, 77 a tool is absent (the message says which), else failure.
set -euo pipefail
step=$1 src=$2 build=$3 tmp=$4
need() {
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "SKIP: $t not found (scripts/setup.sh installs it)"; exit 77; }
  done
}
mkdir -p "$tmp"
prefix=$tmp/prefix
consumer=$src/tests/install/consumer.c
expect="fragscope $("$build/fragscope" --version | awk '{print $2}'): allocated 1024 reserved 2097152"
check_run() { # check_run LABEL PROGRAM...: the consumer prints the expected line
  local got
  got=$("${@:2}")
  [ "$got" = "$expect" ] || { echo "$1: got '$got', want '$expect'"; exit 1; }
  echo "$1: $got"
}
# nm -D of a shared library: every defined dynamic symbol is fsc_* (not the
# internal fsc__*) and declared in the headers under $2.
check_exports() {
  local syms bad=0
  syms=$(nm -D --defined-only "$1" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
  for s in $syms; do
    case $s in
      fsc__*|[!f]*|f[!s]*|fs[!c]*|fsc[!_]*) echo "exported but not public API: $s"; bad=1 ;;
      *) grep -qw -- "$s" "$2"/*.h || { echo "exported but in no public header: $s"; bad=1; } ;;
    esac
  done
  [ $bad = 0 ] || exit 1
  echo "exports $(echo "$syms" | wc -w) symbols, all fsc_* declared in include/fragscope/"
}

case $step in
prefix)
  need cmake nm
  rm -rf "$prefix"
  cmake --install "$build" --prefix "$prefix" >/dev/null
  for f in bin/fragscope include/fragscope/common.h include/fragscope/version.h \
           lib/libfragscope.a lib/libfragscope.so share/man/man1/fragscope.1 \
           lib/cmake/fragscope/fragscopeConfig.cmake lib/cmake/fragscope/fragscopeConfigVersion.cmake \
           lib/pkgconfig/fragscope.pc; do
    [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
  done
  if [ -e "$build/libfragscope_torch.so" ]; then
    for f in lib/fragscope/python/libfragscope_torch.so lib/fragscope/python/fragscope_torch.py; do
      [ -e "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
    done
    torch_syms=$(nm -D --defined-only "$prefix/lib/fragscope/python/libfragscope_torch.so" | awk '{print $NF}' | sed 's/@.*//')
    other=$(echo "$torch_syms" | grep -v '^fsc_torch_' || true)
    [ -z "$other" ] || { echo "libfragscope_torch.so exports more than fsc_torch_*:" $other; exit 1; }
    echo "PyTorch shim installed, exporting $(echo "$torch_syms" | wc -w) fsc_torch_* symbols"
    if ! grep -q '^FSC_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" && command -v python3 >/dev/null; then
      (cd "$tmp" && PYTHONPATH=$prefix/lib/fragscope/python python3 -m fragscope_torch --check) | sed "s|$prefix|PREFIX|"
    fi
  fi
  "$prefix/bin/fragscope" --version
  check_exports "$prefix/lib/libfragscope.so" "$prefix/include/fragscope"
  ;;
cmake)
  need cmake cc
  rm -rf "$tmp/cmake"
  cmake -S "$src/tests/install" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; exit 1; }
  check_run "find_package shared" "$tmp/cmake/consumer_shared"
  check_run "find_package static" "$tmp/cmake/consumer_static"
  ;;
pkgconfig)
  need pkg-config cc
  flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs fragscope)
  # shellcheck disable=SC2086
  cc -o "$tmp/consumer_pc" "$consumer" $flags
  check_run "pkg-config" env LD_LIBRARY_PATH="$prefix/lib" "$tmp/consumer_pc"
  ;;
man)
  need groff
  page=$prefix/share/man/man1/fragscope.1
  warn=$(groff -man -ww -z "$page" 2>&1)
  [ -z "$warn" ] || { echo "groff: $warn"; exit 1; }
  n=0
  for cmd in $("$build/fragscope" --help | awk '/^commands:/{f=1;next} f && NF==0{f=0} f{print $1}'); do
    grep -qx ".SS fragscope $cmd" "$page" || { echo "man page lacks fragscope $cmd"; exit 1; }
    n=$((n + 1))
  done
  # Rendered, the page holds every line of every help text as it is.
  groff -man -Tutf8 -rLL=300n -P-c -P-b -P-u "$page" 2>/dev/null | sed 's/^       //' > "$tmp/man.txt"
  lines=0
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    grep -qxF -- "$line" "$tmp/man.txt" || { echo "man page lacks help line: $line"; exit 1; }
    lines=$((lines + 1))
  done < <("$build/fragscope" --help; for cmd in $("$build/fragscope" --help | awk '/^commands:/{f=1;next} f && NF==0{f=0} f{print $1}'); do "$build/fragscope" help "$cmd"; done)
  echo "man page: $n commands, all $lines help lines"
  ;;
deb)
  need cpack dpkg-deb dpkg-shlibdeps file pkg-config cc
  rm -rf "$tmp/deb" "$tmp/root"
  (cd "$build" && cpack -G DEB -B "$tmp/deb") >"$tmp/deb.log" 2>&1 || { cat "$tmp/deb.log"; exit 1; }
  deb=$(ls "$tmp"/deb/fragscope_*.deb)
  dpkg-deb -I "$deb" > "$tmp/deb.info"
  grep -E '^ (Package|Version|Depends):' "$tmp/deb.info"
  dpkg-deb -c "$deb" | awk '{print $6}' > "$tmp/deb.files"
  for f in ./usr/bin/fragscope ./usr/lib/libfragscope.so ./usr/lib/libfragscope.a \
           ./usr/include/fragscope/version.h ./usr/share/man/man1/fragscope.1 \
           ./usr/lib/cmake/fragscope/fragscopeConfig.cmake ./usr/lib/pkgconfig/fragscope.pc; do
    grep -qx -- "$f" "$tmp/deb.files" || { echo "not in the package: $f"; exit 1; }
  done
  echo "package holds $(wc -l < "$tmp/deb.files") entries"
  dpkg-deb -x "$deb" "$tmp/root"
  "$tmp/root/usr/bin/fragscope" --version
  flags=$(PKG_CONFIG_PATH=$tmp/root/usr/lib/pkgconfig pkg-config --cflags --libs fragscope)
  # shellcheck disable=SC2086
  cc -o "$tmp/consumer_deb" "$consumer" $flags
  check_run "unpacked package" env LD_LIBRARY_PATH="$tmp/root/usr/lib" "$tmp/consumer_deb"
  if [ -e "$build/libfragscope_torch.so" ] && ! grep -q '^FSC_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" &&
     command -v python3 >/dev/null; then
    # Debian's python3 reads the package's .pth in /usr/lib/python3/dist-packages.
    site=$tmp/root/usr/lib/python3/dist-packages
    (cd "$tmp" && python3 -c "import site, sys; site.addsitedir(sys.argv[1]); import fragscope_torch; sys.exit(fragscope_torch._main(['--check']))" "$site") |
      sed "s|$tmp/root|ROOT|"
  fi
  ;;
python)
  # Debian's interpreter: its setuptools and wheel serve the offline build.
  py=/usr/bin/python3
  [ -x "$py" ] || py=$(command -v python3 || true)
  [ -n "$py" ] || { echo "SKIP: python3 not found (scripts/setup.sh installs it)"; exit 77; }
  for m in venv pip setuptools wheel; do
    "$py" -c "import $m" 2>/dev/null ||
      { echo "SKIP: python module $m not found (scripts/setup.sh installs python3-venv, python3-pip, python3-setuptools, python3-wheel)"; exit 77; }
  done
  # A copy of python/, so that the build writes nothing into the source tree.
  rm -rf "$tmp/py" "$tmp/pysrc"
  cp -r "$src/python" "$tmp/pysrc"
  rm -rf "$tmp/pysrc/build" "$tmp"/pysrc/*.egg-info
  modes=OFF
  if [ -e "$build/libfragscope_torch.so" ]; then
    # A sanitized library loads only into a program started with its runtime.
    if grep -q '^FSC_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
      echo "CUDA AUTO: not loaded into python in a sanitizer build"
    else
      modes="AUTO OFF"
    fi
  fi
  for mode in $modes; do
    rm -rf "$tmp/py"
    # The system's pip serves the venv (ensurepip would add seconds per venv).
    "$py" -m venv --system-site-packages --without-pip "$tmp/py"
    FRAGSCOPE_SOURCE_DIR=$src FRAGSCOPE_BUILD_DIR=$build FRAGSCOPE_CUDA=$mode \
      "$tmp/py/bin/python" -m pip install -q --no-build-isolation --no-index \
        --no-cache-dir --disable-pip-version-check "$tmp/pysrc" >"$tmp/pip.log" 2>&1 ||
      { cat "$tmp/pip.log"; exit 1; }
    "$tmp/py/bin/fragscope" --version
    help=$(cd "$tmp" && "$tmp/py/bin/python" -m fragscope_torch --help)
    echo "${help%%$'\n'*}"
    set +e
    msg=$(cd "$tmp" && "$tmp/py/bin/python" -m fragscope_torch --check 2>&1)
    rc=$?
    set -e
    msg=${msg//$tmp/TMP}
    echo "CUDA $mode: --check exit $rc: $msg"
    set +e
    msg=$(cd "$tmp" && "$tmp/py/bin/python" -m fragscope_torch record -o t.fstrace -- \
      "$tmp/py/bin/python" -c 'print(1)' 2>&1)
    rc=$?
    set -e
    echo "record: exit $rc: ${msg//$tmp/TMP}"
  done
  ;;
*)
  echo "run.sh: unknown step $step"; exit 2 ;;
esac
