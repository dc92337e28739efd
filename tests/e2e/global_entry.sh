#!/usr/bin/env bash
# __global__ function templates as entries, end to end through the real
# kpack binary and CUDA toolkit (one arch, sm_90; a handful of small units):
#   a. a namespaced `template <typename T, int BLOCK, int VEC> __global__ void
#      __launch_bounds__(BLOCK) rmsnorm(...)` packages: the header names the
#      instance, the inventory has the mangled symbol, `kpack inspect` shows
#      it demangled, the launcher (pdl: per_call) compiles as C11 with
#      -Wall -Werror (with the auto dispatcher of VEC's auto rule), and
#      `kpack header` writes the same header;
#   b. a block expression that can exceed the launch bounds is refused
#      (CheckBlockFits), exit 1, nothing written;
#   c. a __global__ kernel declared through a macro: nvcc's error once for
#      its 3 units, kpack's note before nvcc's text;
#   d. a template whose parameters do not take the manifest's constexprs:
#      kpack's explicit-instantiation note;
#   e. __cluster_dims__ in the source and launch.cluster in the manifest
#      (CheckCluster);
#   f. a source on an include root outside the project (-I, source: <...>):
#      `-I /nonexistent` is refused, and edits rebuild exactly what they
#      change.
#
#   global_entry.sh KPACK CUDA_ROOT RUNTIME_INCLUDE_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
kpack=$(realpath "$1")
cuda_root=$2
runtime_inc=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$here/checks.sh"
fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f log ] && sed 's/^/  | /' log | tail -40; }

# build PKG [ARGS...]: kpack build of m/PKG.yaml into out/, everything it
# prints in log; its exit status.  One unit cache for the whole script.
build() {
  local pkg=$1; shift
  "$kpack" build "m/$pkg.yaml" --header "out/$pkg.h" --launcher "out/$pkg.c" --asm "out/$pkg.S" \
    --inventory "out/$pkg.json" --depfile "out/$pkg.d" --work-dir "work/$pkg" --cache-dir cache \
    --cuda-root "$cuda_root" -v --quiet "$@" > log 2>&1
}
# nothing_written PKG: none of build's outputs exists.
nothing_written() {
  local f
  for f in "out/$1.h" "out/$1.c" "out/$1.S" "out/$1.json" "out/$1.d"; do [ ! -e "$f" ] || return 1; done
}
# line_of TEXT: the first line of log holding TEXT (fixed string), or 0.
line_of() { grep -nF -m1 -- "$1" log | cut -d: -f1 | grep . || echo 0; }
package() {  # package NAME KERNEL_MANIFEST
  printf 'package: %s\narchs: [sm_90]\nkernels: [%s]\n' "$1" "$2" > "m/$1.yaml"
}

mkdir -p m out

# ---- a. RMSNorm, as an engine writes it ----
cat > m/rmsnorm.cuh <<'CUH'
// RMSNorm, one block per row: out = x / sqrt(mean(x * x) + eps) * weight.
#pragma once
#include <stdint.h>

namespace kpack_e2e {

template <typename T, int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
rmsnorm(T* out, const T* x, const T* weight, uint32_t d, uint32_t rows, float eps) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK is whole warps");
  __shared__ float partial[BLOCK / 32];
  const uint32_t row = blockIdx.x;
  if (row >= rows) return;
  const T* xr = x + static_cast<size_t>(row) * d;
  T* outr = out + static_cast<size_t>(row) * d;
  float sum = 0.f;
  for (uint32_t i = threadIdx.x * VEC; i < d; i += BLOCK * VEC)
    for (int v = 0; v < VEC && i + v < d; ++v) {
      const float f = static_cast<float>(xr[i + v]);
      sum += f * f;
    }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (threadIdx.x == 0) partial[0] = sum;
  }
  __syncthreads();
  const float scale = rsqrtf(partial[0] / static_cast<float>(d) + eps);
  for (uint32_t i = threadIdx.x * VEC; i < d; i += BLOCK * VEC)
    for (int v = 0; v < VEC && i + v < d; ++v)
      outr[i + v] = T(static_cast<float>(xr[i + v]) * scale * static_cast<float>(weight[i + v]));
}

}  // namespace kpack_e2e
CUH
write_rmsnorm() {  # write_rmsnorm BLOCK_EXPR
  cat > m/rmsnorm_k.yaml <<YAML
kernel: rmsnorm
source: rmsnorm.cuh
entry: kpack_e2e::rmsnorm
constexprs:
  - {name: T, type: dtype, values: [f16, f32]}
  - {name: BLOCK, type: int, values: [128], tag: b}
  - {name: VEC, type: int, values: [4], tag: v, auto: "min(4, gcd(16 / sizeof(T), d))"}
params:
  - {name: out, type: T*}
  - {name: x, type: const T*}
  - {name: weight, type: const T*}
  - {name: d, type: u32}
  - {name: rows, type: u32}
  - {name: eps, type: f32}
launch:
  grid: [rows]
  block: [$1]
  pdl: per_call
YAML
}
package rms rmsnorm_k.yaml
write_rmsnorm BLOCK
if build rms && grep -qx 'kpack: 2 units: 2 compiled, 0 from cache (nvcc batches: 1 compiled, 0 from cache, 0 up to date)' log; then
  pass "a __global__ template packages: 2 units compiled"
else
  fail "rmsnorm build"
fi
f16_symbol=_ZN9kpack_e2e7rmsnormI6__halfLi128ELi4EEEvPT_PKS2_S5_jjf
f16_entry='kpack_e2e::rmsnorm<__half, 128, 4>(__half*, __half const*, __half const*, unsigned int, unsigned int, float)'
grep -qxF '/* rmsnorm with T=f16, BLOCK=128, VEC=4: the kernel kpack_e2e::rmsnorm<__half, 128, 4>; SASS for sm_90. */' out/rms.h &&
  grep -qxF '/* rmsnorm with T=f32, BLOCK=128, VEC=4: the kernel kpack_e2e::rmsnorm<float, 128, 4>; SASS for sm_90. */' out/rms.h &&
  grep -qxF 'kpack_status rms_rmsnorm_f16_b128_v4(kpack_stream stream, int pdl, kpack_f16 *out, const kpack_f16 *x, const kpack_f16 *weight, uint32_t d, uint32_t rows, float eps);' out/rms.h &&
  pass "the header names each instance and takes int pdl after the stream" || fail "header: $(grep -n 'rmsnorm with' out/rms.h)"
grep -qxF 'kpack_status rms_rmsnorm_auto(kpack_stream stream, int pdl, kpack_dtype T, int BLOCK, void *out, const void *x, const void *weight, uint32_t d, uint32_t rows, float eps);' out/rms.h &&
  grep -qF 'return rms_rmsnorm(stream, pdl, T, BLOCK, (int)VEC, out, x, weight, d, rows, eps);' out/rms.c &&
  pass "VEC's auto rule gives an auto dispatcher that takes T and BLOCK and computes VEC" ||
  fail "auto dispatcher: $(grep -n '_auto' out/rms.h out/rms.c)"
python3 - out/rms.json "$f16_symbol" "$f16_entry" <<'PY' && pass "the inventory has the mangled symbol and its readable name" || fail "inventory"
import json, sys
inv = json.load(open(sys.argv[1]))
found = {}
def walk(o):
    if isinstance(o, dict):
        if "symbol" in o and "name" in o: found[o["name"]] = (o["symbol"], o.get("entry"))
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
walk(inv)
assert found.get("rmsnorm_f16_b128_v4") == (sys.argv[2], sys.argv[3]), found
assert found.get("rmsnorm_f32_b128_v4", ("",))[0] == "_ZN9kpack_e2e7rmsnormIfLi128ELi4EEEvPT_PKS1_S4_jjf", found
PY
grep -qF "\"$f16_symbol\", &rms_kpack_blobs[" out/rms.c &&
  pass "the launcher's descriptor names the mangled symbol" || fail "descriptor symbol: $(grep -n '_Z' out/rms.c)"
# Both specializations were compiled in one batch: its fatbin's identifier
# names each with its instance's symbol, read from the cubin.
if "$kpack" inspect work/rms/fatbins/rmsnorm.batch-all.fatbin > inspect.txt 2>&1 &&
   grep -qE "^rmsnorm +rmsnorm_f16_b128_v4 +sm_90 .* release +kpack_e2e::rmsnorm<__half, 128, 4>\(__half\*, __half const\*, __half const\*, unsigned int, unsigned int, float\)$" inspect.txt &&
   grep -qE "^rmsnorm +rmsnorm_f32_b128_v4 +sm_90 .* release +kpack_e2e::rmsnorm<float, 128, 4>\(" inspect.txt; then
  pass "kpack inspect shows each specialization of the batch with its demangled instance"
else
  fail "inspect: $(cat inspect.txt)"
fi
if cc -c out/rms.S -o rms_fatbins.o && "$kpack" inspect --json rms_fatbins.o > inspect.json 2>&1 &&
   python3 - inspect.json "$f16_entry" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
specs = sorted((i["specialization"], i["entry"]) for i in d["images"])
assert [s for s, _ in specs] == ["rmsnorm_f16_b128_v4", "rmsnorm_f32_b128_v4"] and specs[0][1] == sys.argv[2], specs
PY
then
  pass "kpack inspect --json of the embedded fatbins has both specializations and entries"
else
  fail "inspect --json of the object: $(cat inspect.json)"
fi
grep -qF '(pdl ? KPACK_LAUNCH_PDL : 0u), 0u, 0u, 0u);' out/rms.c && ! grep -qF 'kpack_launch(' out/rms.c &&
  pass "pdl: per_call launches through kpack_launch_ex with the call's flag" || fail "launch call: $(grep -n 'kpack_launch' out/rms.c)"
if cc -std=c11 -Wall -Werror -I"$runtime_inc" -Iout -c out/rms.c -o rms_launch.o 2> cc.txt; then
  pass "the launcher compiles as C11 with -Wall -Werror"
else
  fail "cc -std=c11: $(cat cc.txt)"
fi
if "$kpack" header m/rms.yaml --header header_only/rms.h > log 2>&1 && cmp -s header_only/rms.h out/rms.h; then
  pass "kpack header writes the build's header without a toolkit"
else
  fail "kpack header: $(diff header_only/rms.h out/rms.h | head)"
fi

# ---- b. a block that can exceed the launch bounds ----
rm -rf out/rms.*
write_rmsnorm d
build rms; rc=$?
expected_b="m/rmsnorm_k.yaml:17:3: error: specialization rmsnorm_f16_b128_v4 (sm_90): the block can reach 4294967295 threads (at d = 4294967295), more than the kernel launches with (its launch bounds allow 128); bound the expression, e.g. with min()
m/rmsnorm_k.yaml:17:3: error: specialization rmsnorm_f32_b128_v4 (sm_90): the block can reach 4294967295 threads (at d = 4294967295), more than the kernel launches with (its launch bounds allow 128); bound the expression, e.g. with min()"
if [ $rc -eq 1 ] && [ "$(grep 'error:' log)" = "$expected_b" ] && [ "$(grep -c 'error' log)" = 2 ] && nothing_written rms &&
   grep -qx 'kpack: 2 units: 0 compiled, 0 from cache, 2 up to date (nvcc batches: 0 compiled, 0 from cache, 1 up to date)' log; then
  pass "block: [d] with a u32 d is refused against __launch_bounds__(128) after the check pass, exit 1, nothing written"
else
  fail "block beyond the launch bounds (rc=$rc)"
fi
write_rmsnorm '"min(d, 256)"'
build rms; rc=$?
[ $rc -eq 1 ] && grep -qxF "m/rmsnorm_k.yaml:17:3: error: specialization rmsnorm_f16_b128_v4 (sm_90): the block can reach 256 threads (at d = 4294967295), more than the kernel launches with (its launch bounds allow 128); bound the expression, e.g. with min()" log &&
  nothing_written rms && pass "min(d, 256) still exceeds 128 and is refused" || fail "min(d, 256) (rc=$rc)"
write_rmsnorm '"min(d, BLOCK)"'
build rms && [ -s out/rms.h ] && pass "min(d, BLOCK) fits and builds" || fail "min(d, BLOCK)"

# ---- c. a __global__ kernel declared through a macro ----
cat > m/macro.cuh <<'CUH'
#pragma once
#include <stdint.h>
#define KERNEL __global__
namespace kpack_e2e {
template <int B>
KERNEL void fill(float* out, uint32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] = B;
}
}  // namespace kpack_e2e
CUH
cat > m/macro_k.yaml <<'YAML'
kernel: fill
source: macro.cuh
entry: kpack_e2e::fill
constexprs:
  - {name: B, type: int, values: [1, 2, 3], tag: b}
params:
  - {name: out, type: f32*}
  - {name: n, type: u32}
launch: {grid: 1, block: [32]}
YAML
package macro macro_k.yaml
build macro; rc=$?
note_c="note: kpack: 'kpack_e2e::fill' is a __global__ function, but kpack found no __global__ declaration of it in m/macro.cuh or the files it includes (macros are not expanded), so it called it as a __device__ function from a kernel of its own; declare it with __global__ spelled out"
error_line=$(line_of "m/macro_k.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'fill' specialization fill_b1 (B=1) for sm_90")
note_line=$(line_of "$note_c")
command_line=$(line_of "  command: $cuda_root/bin/nvcc -cubin -arch=sm_90 ")
nvcc_line=$(line_of "error: a __global__ function call must be configured")
if [ $rc -eq 1 ] && [ "$(grep -c 'error: nvcc failed' log)" = 1 ] && [ "$(grep -c 'must be configured' log)" = 1 ] &&
   [ "$(grep -cF "$note_c" log)" = 1 ] &&
   grep -qxF "note: 2 more unit(s) of kernel 'fill' failed with the same output: fill_b2.sm_90, fill_b3.sm_90" log &&
   [ "$error_line" -gt 0 ] && [ "$note_line" = $((error_line + 1)) ] && [ "$command_line" -gt "$note_line" ] &&
   [ "$nvcc_line" -gt "$command_line" ] && nothing_written macro; then
  pass "a macro-declared __global__: one error for 3 units, kpack's note before nvcc's text"
else
  fail "macro kernel (rc=$rc, lines: error $error_line, note $note_line, command $command_line, nvcc $nvcc_line)"
fi

# ---- d. template parameters that do not take the manifest's constexprs ----
cat > m/kinds.cuh <<'CUH'
#pragma once
#include <stdint.h>
namespace kpack_e2e {
template <int B>
__global__ void scale(float* out, uint32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] *= B;
}
}  // namespace kpack_e2e
CUH
cat > m/kinds_k.yaml <<'YAML'
kernel: scale
source: kinds.cuh
entry: kpack_e2e::scale
constexprs:
  - {name: T, type: dtype, values: [f32]}
params:
  - {name: out, type: f32*}
  - {name: n, type: u32}
launch: {grid: 1, block: [32]}
YAML
package kinds kinds_k.yaml
build kinds; rc=$?
note_d="note: kpack: the explicit instantiation of the __global__ template 'kpack_e2e::scale' (m/kinds.cuh:5:17) failed: its template parameters must take the manifest's constexprs, in the manifest's order, and its parameters the manifest's params"
error_line=$(line_of "m/kinds_k.yaml:1:9: error: nvcc failed (exit code 1) for kernel 'scale' specialization scale_f32 (T=f32) for sm_90")
note_line=$(line_of "$note_d")
nvcc_line=$(line_of 'error: no instance of function template "kpack_e2e::scale" matches the specified type')
if [ $rc -eq 1 ] && [ "$error_line" -gt 0 ] && [ "$note_line" = $((error_line + 1)) ] && [ "$nvcc_line" -gt "$note_line" ] &&
   nothing_written kinds; then
  pass "a dtype for an int template parameter: kpack's explicit-instantiation note, then nvcc's"
else
  fail "template kinds (rc=$rc, lines: error $error_line, note $note_line, nvcc $nvcc_line)"
fi

# ---- e. __cluster_dims__ and launch.cluster ----
cat > m/cluster.cuh <<'CUH'
#pragma once
#include <stdint.h>
namespace kpack_e2e {
template <int B>
__global__ void __cluster_dims__(2, 1, 1) pair(float* out, uint32_t n) {
  if (threadIdx.x < n) out[blockIdx.x * blockDim.x + threadIdx.x] = B;
}
}  // namespace kpack_e2e
CUH
write_cluster() {  # write_cluster EXTRA_LAUNCH_LINE
  printf 'kernel: pair\nsource: cluster.cuh\nentry: kpack_e2e::pair\nconstexprs:\n  - {name: B, type: int, values: [1]}\n' > m/cluster_k.yaml
  printf 'params:\n  - {name: out, type: f32*}\n  - {name: n, type: u32}\nlaunch:\n  grid: 2\n  block: [32]\n%s' "$1" >> m/cluster_k.yaml
}
package cluster cluster_k.yaml
write_cluster $'  cluster: [2]\n'
build cluster; rc=$?
if [ $rc -eq 1 ] && [ "$(grep 'error' log)" = "m/cluster_k.yaml:12:3: error: specialization pair_b1 (sm_90): the kernel sets its own cluster dimensions (__cluster_dims__(2, 1, 1)); remove launch.cluster" ] &&
   nothing_written cluster; then
  pass "launch.cluster on a __cluster_dims__ kernel is refused at the key, exit 1, nothing written"
else
  fail "cluster (rc=$rc)"
fi
write_cluster $'  pdl: true\n'
if build cluster && grep -qx 'kpack: 1 units: 0 compiled, 0 from cache, 1 up to date' log &&
   grep -qF 'KPACK_LAUNCH_PDL, 0u, 0u, 0u);' out/cluster.c &&
   cc -std=c11 -Wall -Werror -I"$runtime_inc" -Iout -c out/cluster.c -o cluster_launch.o 2> cc.txt; then
  pass "without launch.cluster it builds (no unit recompiled); pdl: true launches with KPACK_LAUNCH_PDL"
else
  fail "cluster without launch.cluster: $(cat cc.txt 2>/dev/null)"
fi

# ---- f. a header-only library on an include root outside the project ----
vendor=$work/vendor
mkdir -p "$vendor/lib"
cat > "$vendor/lib/k.cuh" <<'CUH'
#pragma once
#include <stdint.h>
#include "detail.cuh"
namespace vlib {
template <int B>
__global__ void axpb(float* out, uint32_t n) {
  if (threadIdx.x < n) out[threadIdx.x] = scale(B) * out[threadIdx.x];
}
}  // namespace vlib
CUH
cat > "$vendor/lib/detail.cuh" <<'CUH'
#pragma once
namespace vlib {
__device__ __forceinline__ float scale(int b) { return 2.0f * b; }
}  // namespace vlib
CUH
echo '// no kernel includes this' > "$vendor/lib/unrelated.cuh"
cat > m/inc_k.yaml <<'YAML'
kernel: axpb
source: <lib/k.cuh>
entry: vlib::axpb
constexprs:
  - {name: B, type: int, values: [4]}
params:
  - {name: out, type: f32*}
  - {name: n, type: u32}
launch: {grid: 1, block: [32]}
YAML
package inc inc_k.yaml

build inc -I /nonexistent; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "error: include directory '/nonexistent' (-I) not found" ] && nothing_written inc &&
   [ ! -e work/inc ]; then
  pass "-I /nonexistent: one error, exit 1, nothing written"
else
  fail "-I /nonexistent (rc=$rc)"
fi
build inc -I "$vendor/lib/detail.cuh"; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "error: include directory '$vendor/lib/detail.cuh' (-I) is not a directory" ] &&
   nothing_written inc; then
  pass "-I a file: one error, exit 1, nothing written"
else
  fail "-I a file (rc=$rc): $(cat log)"
fi
mkdir 'semi;colon'
build inc -I "$vendor" -I 'semi;colon'; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "error: include directory 'semi;colon' (-I) contains ';'; nvcc passes include paths through a shell, so kpack refuses shell metacharacters" ] &&
   nothing_written inc; then
  pass "an -I directory with a shell metacharacter is refused, nothing written"
else
  fail "-I with ';' (rc=$rc)"
fi
"$kpack" build m/inc.yaml --header out/inc.h -I > log 2>&1; rc=$?
[ $rc -eq 2 ] && [ "$(cat log)" = "kpack: error: -I needs a directory" ] && nothing_written inc &&
  pass "a trailing -I is a usage error (exit 2)" || fail "trailing -I (rc=$rc)"
build inc; rc=$?
if [ $rc -eq 1 ] && [ "$(cat log)" = "m/inc_k.yaml:2:9: error: source '<lib/k.cuh>' is looked for on the include directories, but the build gives none (kpack build -I DIR, or include_dirs: in the package file)" ] &&
   nothing_written inc; then
  pass "source: <...> without -I is a located error"
else
  fail "no -I (rc=$rc)"
fi
expect_counts() {  # description, expected "N units: ..." text
  if grep -qx "kpack: $2" log; then pass "$1"; else fail "$1 (want '$2', got '$(grep 'units:' log)')"; fi
}
build inc -I "$vendor" && expect_counts "source: <lib/k.cuh> on -I builds" "1 units: 1 compiled, 0 from cache"
if grep -qx '#include <lib/k.cuh>' work/inc/units/axpb_b4.sm_90.cu &&
   python3 - work/inc/units/axpb_b4.sm_90.unit "$vendor" <<'PY'
import json, sys
flags = json.load(open(sys.argv[1]))["job"]["flags"]
assert flags == ["-cubin", "-arch=sm_90", "-O3", "-std=c++17", "-I" + sys.argv[2]], flags
PY
then
  pass "the unit includes <lib/k.cuh>, with -I$vendor and not the source's directory"
else
  fail "the unit's source and flags"
fi
build inc "-I$vendor" && expect_counts "-IDIR (one word) is the same build: nothing to do" "1 units: 0 compiled, 0 from cache, 1 up to date"
echo '// a comment' >> "$vendor/lib/detail.cuh"
build inc -I "$vendor" && expect_counts "a comment in an included header: served by the preprocessed key" "1 units: 0 compiled, 1 from cache"
sed -i 's/return 2.0f \* b;/return 3.0f * b;/' "$vendor/lib/detail.cuh"
build inc -I "$vendor" && expect_counts "editing an included header's code recompiles the unit" "1 units: 1 compiled, 0 from cache"
sed -i 's/scale(B) \* out/scale(B) + out/' "$vendor/lib/k.cuh"
build inc -I "$vendor" && expect_counts "editing the kernel body recompiles the unit" "1 units: 1 compiled, 0 from cache"
echo '// edited' >> "$vendor/lib/unrelated.cuh"
build inc -I "$vendor" && expect_counts "editing an unrelated header rebuilds nothing" "1 units: 0 compiled, 0 from cache, 1 up to date"
grep -qF "$vendor/lib/detail.cuh" out/inc.d && pass "the depfile names the vendor headers" || fail "depfile: $(cat out/inc.d)"

finish
