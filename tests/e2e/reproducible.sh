#!/usr/bin/env bash
# Reproducible builds: two clean builds of the same package, from different
# directories at different times, give byte-identical libraries, headers,
# launchers, embedding assembly and inventories.  Each compiles for real with
# its own empty unit cache (and its own Triton cache: Triton's cache key
# ignores the source path, so a shared one could hide a path in the cubin).
# The package is the engine example's (tests/subproject/engine) plus a Triton
# kernel written here; its kpack is the one this build made
# (-Dkpack:kpack_exe), so the compiler is not built twice.  The second build
# directory sits deeper under the engine than the first, so the sources are
# at another relative path from it.
#
#   reproducible.sh KPACK_SOURCE_DIR KPACK_EXE [PYTHON]
#
# PYTHON runs Triton in both builds (-Dkpack:python; Meson's kpack_python).
set -euo pipefail
src=$1 kpack=$(realpath "$2") python=${3:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Without Triton the package is the CUDA kernels alone (said, not hidden).
triton=no
if "$python" -c 'import triton' 2>/dev/null; then triton=yes; else echo "note: Triton is not installed for $python: CUDA kernels only"; fi

add_triton_kernel() {  # add_triton_kernel ENGINE_DIR: a Triton kernel in two specializations
  cat > "$1/kernels/offset.py" <<'PY'
import triton
import triton.language as tl


@triton.jit
def offset(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n) + 1.0, mask=offs < n)
PY
  cat > "$1/manifests/offset.yaml" <<'YAML'
kernel: offset
language: triton
source: ../kernels/offset.py
entry: offset
constexprs:
  - {name: T, type: dtype, values: [f32]}
  - {name: BLOCK, type: int, values: [256, 1024], tag: b}
params:
  - {name: x, type: const T*}
  - {name: out, type: T*}
  - {name: n, type: i32}
launch:
  grid: ["cdiv(n, BLOCK)"]
YAML
  sed -i 's/^kernels: \[scale.yaml\]$/kernels: [scale.yaml, offset.yaml]/' "$1/manifests/engine.yaml"
  grep -q 'offset.yaml' "$1/manifests/engine.yaml" || { echo "FAILED: could not add the Triton kernel to engine.yaml"; exit 1; }
}

build_in() {  # build_in DIR BUILD_DIR: a fresh copy of the engine, built in DIR/engine/BUILD_DIR
  mkdir -p "$1"
  cp -r "$src/tests/subproject/engine" "$1/engine"
  [ $triton = yes ] && add_triton_kernel "$1/engine"
  mkdir -p "$1/engine/subprojects"
  ln -s "$src" "$1/engine/subprojects/kpack"
  (cd "$1/engine" &&
   meson setup "$2" -Dkpack:kpack_exe="$kpack" -Dkpack:kpack_cache_dir="$1/cache" -Dkpack:python="$python" \
     >"$1/setup.log" 2>&1 &&
   TRITON_CACHE_DIR="$1/triton-cache" nice meson compile -C "$2" >"$1/compile.log" 2>&1) ||
    { cat "$1/setup.log" "$1/compile.log" | tail -50; exit 1; }
}

build_in "$work/first" out
sleep 2  # a different second for anything that would record the time
build_in "$work/second/at/another/depth" builds/release/out

a=$work/first/engine/out b=$work/second/at/another/depth/engine/builds/release/out
# Both compiled their units (nothing came from a cache): 2 CUDA units in one
# batch (one nvcc run), stored under its direct and its preprocessed key,
# and 4 Triton units (2 specializations, each also built as the JIT builds
# an ordinary call), each under one key.
expected=$([ $triton = yes ] && echo 6 || echo 2)
for d in "$work/first" "$work/second/at/another/depth"; do
  n=$(find "$d/cache" -name '*.bin' 2>/dev/null | wc -l)
  [ "$n" -eq "$expected" ] || { echo "FAILED: expected $expected fresh cache entries in $d/cache, found $n"; exit 1; }
done
if [ $triton = yes ]; then
  grep -q '"language": "triton"' "$a/engine.json" || { echo "FAILED: the inventory has no Triton kernel"; exit 1; }
  grep -q '^kpack_status engine_offset_f32_b1024(' "$a/engine_launch.c" || { echo "FAILED: no Triton launcher"; exit 1; }
  # The subproject compiled it with PYTHON's Triton (-Dkpack:python).
  grep -qF "\"triton\": \"$("$python" "$src/compiler/triton_helper.py" version)\"" "$a/engine.json" ||
    { echo "FAILED: the inventory does not name $python's Triton"; grep '"triton"' "$a/engine.json"; exit 1; }
fi
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
