#!/usr/bin/env bash
# Reproducible builds: two clean builds of the same package, from different
# directories at different times, give byte-identical libraries, headers and
# inventories.  Each compiles for real with its own empty unit cache.  The
# package is the engine example's (tests/subproject/engine); its kpack is the
# one this build made (-Dkpack:kpack_exe), so the compiler is not built twice.
#
#   reproducible.sh KPACK_SOURCE_DIR KPACK_EXE
set -euo pipefail
src=$1 kpack=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_in() {  # build_in DIR: a fresh copy of the engine, built in DIR/engine/out
  mkdir -p "$1"
  cp -r "$src/tests/subproject/engine" "$1/engine"
  mkdir -p "$1/engine/subprojects"
  ln -s "$src" "$1/engine/subprojects/kpack"
  (cd "$1/engine" &&
   meson setup out -Dkpack:kpack_exe="$kpack" -Dkpack:kpack_cache_dir="$1/cache" >"$1/setup.log" 2>&1 &&
   nice meson compile -C out >"$1/compile.log" 2>&1) || { cat "$1/setup.log" "$1/compile.log" | tail -50; exit 1; }
}

build_in "$work/first"
sleep 2  # a different second for anything that would record the time
build_in "$work/second/at/another/depth"

a=$work/first/engine/out b=$work/second/at/another/depth/engine/out
# Both compiled their units (nothing came from a cache).
for d in "$a" "$b"; do
  n=$(find "$(dirname "$d")/../cache" -name '*.bin' 2>/dev/null | wc -l)
  # 2 units, each stored under its direct and its preprocessed key.
  [ "$n" -eq 4 ] || { echo "FAILED: expected 2 freshly compiled units (4 entries) in $d's cache, found $n"; exit 1; }
done
head -c 8 "$a/libengine.a" | grep -q '^!<arch>' || { echo "FAILED: libengine.a is not a plain archive"; exit 1; }
ar t "$a/libengine.a" | grep -q kpack_runtime.c.o || { echo "FAILED: libengine.a lacks the runtime"; exit 1; }
status=0
for f in libengine.a engine.h engine.json engine_launch.c engine_fatbins.S; do
  if cmp -s "$a/$f" "$b/$f"; then
    echo "identical: $f ($(stat -c %s "$a/$f") bytes)"
  else
    echo "FAILED: $f differs between the two builds"; cmp "$a/$f" "$b/$f" || true; status=1
  fi
done
exit $status
