#!/usr/bin/env bash
# An engine using kpack as a Meson subproject (tests/subproject/engine):
# kpack's compiler and runtime are built inside the engine's build, without
# kpack's tests, benchmarks or bundled kernels, and the engine packages its
# own manifests.  The unit cache is shared with the main build (CACHE_DIR),
# so only the compiler build costs time here.
#
#   subproject.sh KPACK_SOURCE_DIR CACHE_DIR
set -euo pipefail
src=$1 cache=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/tests/subproject/engine" "$work/engine"
mkdir -p "$work/engine/subprojects"
ln -s "$src" "$work/engine/subprojects/kpack"

cd "$work/engine"
meson setup build -Dkpack:kpack_cache_dir="$cache" >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
nice meson compile -C build >"$work/compile.log" 2>&1 || { tail -50 "$work/compile.log"; exit 1; }

# Nothing of kpack's own package was built.
if find build/subprojects -name 'libkernels.a' -o -name 'kernels.h' | grep -q .; then
  echo "FAILED: the subproject built kpack's bundled package"; exit 1
fi
./build/engine >"$work/run.txt"
cat "$work/run.txt"
expected="package engine, kpack 0.1.0, ABI 1, release, 2 specializations
scale_f32: sm_80, release, BYTES
scale_f16: sm_80, release, BYTES
KPACK_ERROR_NO_SPECIALIZATION: scale: no specialization T=bf16; built: T=f32, T=f16"
actual=$(sed -E 's/[0-9]+ bytes$/BYTES/' "$work/run.txt")
[ "$actual" = "$expected" ] || { echo "FAILED: expected:"; echo "$expected"; exit 1; }
readelf -d build/engine | grep -q 'NEEDED.*libcuda' && { echo "FAILED: the engine links libcuda"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['package']=='engine' and d['num_units']==2, d" \
  build/engine.json
echo "subproject: ok"
