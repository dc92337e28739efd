#!/usr/bin/env bash
# End to end through the real kpack binary and the real CUDA toolkit:
# malformed manifests and failing templates give one clear error, a non-zero
# exit and no partial outputs; a rebuild is served from the cache; flags are
# never seen by a shell.
set -u
kpack=$(realpath "$1")
cuda_root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$(dirname "$0")/checks.sh"

write_package() {
  mkdir -p m
  cat > m/kpack.yaml <<YAML
package: e2e
archs: [sm_80]
kernels: [k.yaml]
YAML
  cat > m/k.cuh <<'CUH'
template <int B>
__device__ __forceinline__ void k(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B;
}
CUH
  cat > m/k.yaml <<YAML
kernel: k
source: k.cuh
entry: k
constexprs:
  - {name: B, type: int, values: [1, 2], tag: b}
params:
  - {name: n, type: i64}
  - {name: out, type: f32*}
launch: {grid: 1, block: 32}
nvcc_flags: [-DKPACK_E2E=1]
YAML
}

build() {
  "$kpack" build m/kpack.yaml --header out/e2e.h --launcher out/e2e.c --asm out/e2e.S \
    --work-dir out/work --cuda-root "$cuda_root" -v "$@" > log 2>&1
}

# 1. A good build writes every output; a rebuild compiles nothing.
write_package
if build && [ -s out/e2e.h ] && [ -s out/e2e.c ] && [ -s out/e2e.S ] && grep -q '2 units: 2 compiled, 0 from cache' log; then
  pass "first build compiles 2 units and writes the outputs"
else
  fail "first build"; cat log
fi
build
grep -q '2 units: 0 compiled, 0 from cache, 2 up to date' log && pass "rebuild compiles nothing" || { fail "rebuild"; cat log; }

# nvcc runs its sub-steps through /bin/sh, so kpack must refuse flags that a
# shell would interpret; nothing may run.
cp m/k.yaml good.yaml
sed -i 's/\[-DKPACK_E2E=1\]/["-DKPACK_E2E=$(touch pwned)"]/' m/k.yaml
build; rc=$?
if [ $rc -eq 1 ] && [ ! -e pwned ] && grep -q "^m/k.yaml:10:14: error: nvcc flag '-DKPACK_E2E=\$(touch pwned)' contains '\$'; nvcc passes flags through a shell" log; then
  pass "shell metacharacters in flags are refused and nothing runs"
else
  fail "shell metacharacters (rc=$rc)"; cat log
fi
cp good.yaml m/k.yaml
cp out/e2e.h before.h

# 2. Adding one value compiles exactly one new unit per arch.
sed -i 's/values: \[1, 2\]/values: [1, 2, 3]/' m/k.yaml
build
grep -q '3 units: 3 compiled, 0 from cache (nvcc batches: 1 compiled, 0 from cache, 0 up to date)' log &&
  pass "one new value compiles its batch" || { fail "incremental"; cat log; }
sed -i 's/values: \[1, 2, 3\]/values: [1, 2]/' m/k.yaml
build && cp out/e2e.h before.h

# 3. A malformed manifest: one error line, exit 1, outputs untouched.
sed -i 's/entry: k/entry: k\nentyr: k/' m/k.yaml
build; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "m/k.yaml:4:1: error: unknown key 'entyr' in a kernel manifest (expected one of: kernel, language, source, module, entry, doc, constexprs, options, params, exclude, launch, archs, ptx, nvcc_flags, debug, allow_debug, autotune, variants, load, assume, tune, batch)" ] \
   && cmp -s before.h out/e2e.h; then
  pass "malformed manifest: one located error, exit 1, outputs untouched"
else
  fail "malformed manifest (rc=$rc)"; cat log
fi
write_package

# 4. A template that does not compile: nvcc's text, tied to kernel and specialization.
rm -rf out
sed -i 's/out\[threadIdx.x\] = B;/out[threadIdx.x] = undefined_thing;/' m/k.cuh
build; rc=$?
if [ $rc -eq 1 ] && grep -q "^m/k.yaml:1:9: error: nvcc failed (exit code [0-9]*) for kernel 'k' specialization k_b1 (B=1) for sm_80$" log \
   && grep -q 'identifier "undefined_thing" is undefined' log && [ ! -e out/e2e.h ] && [ ! -e out/e2e.c ]; then
  pass "compile error: nvcc's message with kernel, specialization and arch; no outputs"
else
  fail "compile error (rc=$rc)"; cat log
fi
write_package

# 5. A template whose signature differs from the manifest's params.
sed -i 's/int64_t n, float\* out/int n, float* out/' m/k.cuh
build; rc=$?
if [ $rc -eq 1 ] && grep -q "kpack: k<1> must be a __device__ function taking exactly (int64_t n, float\* out), as the manifest's params say" log; then
  pass "signature mismatch is a build error naming the expected parameters"
else
  fail "signature mismatch (rc=$rc)"; cat log
fi
write_package

# 6. --perf prints every pass: compile and pack run as Ninja edges, or in
# kpack's own threads with --ninja none (which must give the same outputs).
build --perf
for pass_name in load expand plan compile+pack check embed generate; do
  grep -q "^kpack: $pass_name [0-9.]* ms$" log || { fail "--perf lacks $pass_name"; cat log; }
done
pass "--perf times every pass"
cp out/e2e.S ninja.S
rm -rf out
build --perf --ninja none
for pass_name in load expand plan compile pack check embed generate; do
  grep -q "^kpack: $pass_name [0-9.]* ms$" log || { fail "--perf --ninja none lacks $pass_name"; cat log; }
done
grep -q '2 units: 2 compiled, 0 from cache (nvcc batches: 1 compiled, 0 from cache, 0 up to date)$' log &&
  cmp -s ninja.S out/e2e.S &&
  pass "--ninja none builds the same outputs" || { fail "--ninja none"; cat log; }


# 7. Usage errors of the build-cost options: exit 2, one line, word for word.
for args in "--batch 0|--batch takes specializations per nvcc run, from 1 to 64" \
            "--batch 65|--batch takes specializations per nvcc run, from 1 to 64" \
            "--triton-timeout 0|--triton-timeout takes seconds per Triton compile, from 1 to 86400"; do
  build ${args%%|*}; rc=$?
  [ $rc -eq 2 ] && [ "$(cat log)" = "kpack: error: ${args#*|}" ] && pass "${args%%|*} is a usage error" ||
    { fail "${args%%|*} (rc=$rc)"; cat log; }
done

finish
