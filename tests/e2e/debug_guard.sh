#!/usr/bin/env bash
# The debug guard end to end, with the real kpack and CUDA toolkit: a
# release build refuses a -G kernel at the flag's file:line:col and writes
# nothing; a manifest's allow_debug (or a development build) ships it, and
# the header, the inventory and `kpack inspect` all say it is a debug build.
#
#   debug_guard.sh KPACK CUDA_ROOT
set -u
kpack=$(realpath "$1")
cuda_root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$(dirname "$0")/checks.sh"

mkdir m
printf 'package: dbg\narchs: [sm_80]\nkernels: [k.yaml]\n' > m/kpack.yaml
cat > m/k.cuh <<'CUH'
template <int B>
__device__ __forceinline__ void k(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B;
}
CUH
write_kernel() {  # write_kernel EXTRA_LINES
  printf 'kernel: k\nsource: k.cuh\nentry: k\nconstexprs:\n  - {name: B, type: int, values: [1], tag: b}\n' > m/k.yaml
  printf 'params:\n  - {name: n, type: i64}\n  - {name: out, type: f32*}\nlaunch: {grid: 1, block: 32}\n' >> m/k.yaml
  printf '%s' "$1" >> m/k.yaml
}
build() {  # build EXTRA_ARGS...: kpack build into out/, stderr in err.txt
  rm -rf out
  "$kpack" build m/kpack.yaml --header out/dbg.h --launcher out/dbg_launch.c --asm out/dbg_fatbins.S \
    --inventory out/dbg.json --work-dir work --cache-dir cache --cuda-root "$cuda_root" -j 1 "$@" 2>err.txt
}

write_kernel $'nvcc_flags: [-lineinfo, -G]\n'
build; status=$?
expected="m/k.yaml:10:25: error: kernel 'k' is a debug build (nvcc flag -G) and this is a release build; debug kernels run many times slower. Remove it, or add 'allow_debug: true' to the manifest to ship a debug kernel"
if [ $status -eq 1 ] && [ "$(cat err.txt)" = "$expected" ] && [ ! -e out ]; then
  pass "a release build refuses -G at its position and writes nothing"
else
  fail "release build with -G: status $status, outputs $(ls out 2>/dev/null | wc -l), stderr: $(cat err.txt)"
fi

write_kernel $'debug: true\n'
build; status=$?
if [ $status -eq 1 ] && grep -q "^m/k.yaml:10:1: error: kernel 'k' is a debug build (debug: true) and this is a release build;" err.txt; then
  pass "debug: true is refused the same way"
else
  fail "debug: true: status $status, stderr: $(cat err.txt)"
fi

build --allow-debug-kernels; status=$?
if [ $status -eq 0 ] && grep -q '"build_mode": "debug"' out/dbg.json && grep -q 'DEBUG BUILD (slow)' out/dbg.h; then
  pass "a development build (--allow-debug-kernels) ships it, marked debug"
else
  fail "--allow-debug-kernels: status $status, stderr: $(cat err.txt)"
fi

write_kernel $'nvcc_flags: [-G]\nallow_debug: true\n'
build; status=$?
if [ $status -eq 0 ] && grep -q '"num_debug_specializations": 1' out/dbg.json &&
   grep -q 'info->build_mode = "debug";' out/dbg_launch.c && grep -q '"dbg", "k", "k_b1",' out/dbg_launch.c; then
  pass "allow_debug: true ships it; build_info and the descriptor say debug"
else
  fail "allow_debug: status $status, stderr: $(cat err.txt)"
fi
# The embedded fatbin, as the assembler makes it, shows the mode to inspect.
if cc -c out/dbg_fatbins.S -o fatbins.o && "$kpack" inspect fatbins.o > inspect.txt &&
   awk 'NR == 2 { exit !($1 == "k" && $2 == "k_b1" && $3 == "sm_80" && $9 == "debug") }' inspect.txt &&
   grep -q "1 DEBUG images (slow)" inspect.txt; then
  pass "kpack inspect shows the debug kernel"
else
  fail "inspect: $(cat inspect.txt)"
fi

write_kernel ''
build; status=$?
if [ $status -eq 0 ] && grep -q '"build_mode": "release"' out/dbg.json && grep -q 'info->build_mode = "release";' out/dbg_launch.c; then
  pass "without debug flags it is a release build"
else
  fail "release: status $status, stderr: $(cat err.txt)"
fi

finish
