#!/usr/bin/env bash
# kpack tune end to end (docs/tuning.md), without a GPU: a tiny package
# with a tune: section is built by the real kpack and nvcc (sm_90, with
# --tuner), its harness is compiled and linked as Meson would (the tables,
# compiler/kpack_tune_main.c, the launchers, the fatbins and the runtime,
# -Wall -Wextra -Werror), and kpack tune runs it against the fake driver
# (tests/fake_cuda/fake_cuda_tune.c), whose modelled time per launch,
# 2 + 0.01 * blocks + 0.001 * threads per block microseconds, says which
# BLOCK wins at each shape.  Checked:
#   a. the tuning file: the winners, times and margins of the cost model,
#      and kpack build reads it back;
#   b. the report and the progress lines;
#   c. the harness's own protocol (--list, --run);
#   d. errors write nothing and leave an earlier file as it was: a tuner
#      built from other manifests, buffers beyond the device's free memory
#      (found before anything is timed), a launch that fails, no SASS for
#      the device, a --kernel the package does not tune;
#   e. a second run writes the same bytes.
#
#   tune.sh KPACK CUDA_ROOT SOURCE_ROOT FAKE_CUDA_SO
set -u
here=$(cd "$(dirname "$0")" && pwd)
kpack=$(realpath "$1")
cuda_root=$2
src=$(realpath "$3")
fake=$(realpath "$4")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$here/checks.sh"
fail() { failed=$((failed + 1)); echo "FAILED: $1"; [ -f log ] && sed 's/^/  | /' log | tail -30; }

mkdir -p m
cat > m/kpack.yaml <<'YAML'
package: tiny
archs: [sm_90]
kernels: [scale.yaml]
YAML
write_scale() {  # write_scale SHAPES
  cat > m/scale.yaml <<YAML
kernel: scale
source: scale.cuh
entry: scale
constexprs:
  - {name: T, type: dtype, values: [f32, f16]}
  - {name: BLOCK, type: int, values: [64, 128, 256], tag: b, auto: "n < 4096 ? 64 : 256"}
params:
  - {name: x, type: T*}
  - {name: n, type: i64}
  - {name: stride, type: i64}
launch:
  grid: "cdiv(n, BLOCK)"
  block: [BLOCK]
tune:
  key: [n]
  shapes: {n: [$1]}
  params: {stride: n * 2}
  buffers: {x: n}
YAML
}
write_scale "256, 1024, 16384"
cat > m/scale.cuh <<'CUH'
#include <stdint.h>
template <typename T, int BLOCK>
__device__ __forceinline__ void scale(T* x, int64_t n, int64_t stride) {
  const int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x;
  if (i < n && i < stride) x[i] = x[i] + x[i];
}
CUH

# The package and its harness, as manifests/meson.build builds kernels-tune.
build_tuner() {
  "$kpack" build m/kpack.yaml --header out/tiny.h --launcher out/tiny.c --asm out/tiny.S --work-dir work \
    --tuner out/tiny_tune.c --cuda-root "$cuda_root" --quiet > log 2>&1 || return 1
  local f
  for f in kpack_runtime driver errors; do
    cc -std=c11 -O1 -I"$src/runtime" -I"$cuda_root/include" -c "$src/runtime/$f.c" -o "out/$f.o" >> log 2>&1 || return 1
  done
  cc -c out/tiny.S -o out/tiny_fatbins.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -Iout -c out/tiny.c -o out/tiny_launch.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -I"$src/compiler" -Iout -c out/tiny_tune.c \
      -o out/tiny_tune.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -I"$src/compiler" -I"$cuda_root/include" \
      -c "$src/compiler/kpack_tune_main.c" -o out/tune_main.o >> log 2>&1 &&
    cc -o tiny-tune out/tune_main.o out/tiny_tune.o out/tiny_launch.o out/tiny_fatbins.o out/kpack_runtime.o \
      out/driver.o out/errors.o -ldl -lpthread -lm >> log 2>&1
}
# tune DIR [ARGS...]: kpack tune of the package into DIR; stderr in log.
tune() {
  local dir=$1; shift
  "$kpack" tune m/kpack.yaml --tuner ./tiny-tune -o "$dir" --driver "$fake" "$@" > log 2>&1
}
yaml=tuning/nvidia-a100-sxm4-40gb.yaml
html=tuning/nvidia-a100-sxm4-40gb.html

if build_tuner; then pass "the harness of a package with tune: compiles with -Werror and links"; else fail "build the harness"; finish; exit; fi

# ---- a. the tuning file ----
if tune tuning --repeats 5; then pass "kpack tune against the fake driver"; else fail "kpack tune (rc $?)"; fi
cp log tune.log
# The cost model's winner at each shape: the BLOCK with the least
# 2 + 0.01 * ceil(n / BLOCK) + 0.001 * BLOCK.
expected=$(for n in 256 1024 16384; do
  for b in 64 128 256; do echo "$n $b $(awk -v n=$n -v b=$b 'BEGIN { printf "%.6f", 2 + 0.01 * int((n + b - 1) / b) + 0.001 * b }')"; done |
    sort -k3,3g | head -1 | awk '{ print "n=" $1 " BLOCK=" $2 }'
done)
got=$(sed -n 's/^ *- {n: \([0-9]*\), best: "\(BLOCK=[0-9]*\)".*/n=\1 \2/p' "$yaml" | head -3)
if [ -n "$expected" ] && [ "$got" = "$expected" ] &&
   [ "$(sed -n 's/^ *- {n: \([0-9]*\), best: "\(BLOCK=[0-9]*\)".*/n=\1 \2/p' "$yaml" | tail -3)" = "$expected" ]; then
  pass "the winners are the cost model's at every shape, in both tables ($(echo $expected))"
else
  fail "winners: want '$expected', got '$got'"
fi
if grep -qxF '          - {n: 256, best: "BLOCK=64", margin: 1.021, us: {"BLOCK=64": 2.1, "BLOCK=128": 2.15, "BLOCK=256": 2.27}}' "$yaml" &&
   grep -qxF '          - {n: 1024, best: "BLOCK=128", margin: 1.007, us: {"BLOCK=64": 2.22, "BLOCK=128": 2.21, "BLOCK=256": 2.3}}' "$yaml" &&
   grep -qxF '          - {n: 16384, best: "BLOCK=256", margin: 1.177, us: {"BLOCK=64": 4.62, "BLOCK=128": 3.41, "BLOCK=256": 2.9}}' "$yaml" &&
   grep -qx 'gpu: NVIDIA A100-SXM4-40GB' "$yaml" && grep -qx 'sm: 80' "$yaml" && grep -qx 'driver: "CUDA 13.0"' "$yaml" &&
   grep -qx 'repeats: 5' "$yaml" && grep -qx '      - for: {T: f16}' "$yaml"; then
  pass "the tuning file holds the modelled times, margins, the device and the tables"
else
  fail "tuning file: $(cat "$yaml")"
fi
{ cat m/kpack.yaml; echo "tuning: [../$yaml]"; } > m/tuned.yaml
if "$kpack" header m/tuned.yaml --header out/tuned.h --root . > log 2>&1 && grep -q 'tuning file' out/tuned.h; then
  pass "kpack build reads the tuning file back"
else
  fail "kpack header with the tuning file"
fi

# ---- a2. --eval: the auto dispatcher (here its rule, no table is built in)
# against every candidate at untuned shapes, as bench/tune/quality.py reads it ----
if ./tiny-tune --eval 4 --seed 3 --repeats 3 --driver "$fake" > eval.json 2> log &&
   python3 - eval.json > log 2>&1 <<'PY'
import json, sys
cells = {}
for line in open(sys.argv[1]):
    rec = json.loads(line).get("eval")
    if rec:
        cells.setdefault((rec["combo"], rec["key"]["n"]), {})[rec["candidate"]] = rec["us"]
assert len(cells) == 8, cells  # 4 shapes for each of 2 dtypes
for (combo, n), us in cells.items():
    assert n not in (256, 1024, 16384) and 256 <= n <= 16384, n
    assert sorted(us) == ["BLOCK=128", "BLOCK=256", "BLOCK=64", "auto"], us
    rule = "BLOCK=64" if n < 4096 else "BLOCK=256"
    assert us["auto"] == us[rule], (n, us)  # the fake's cost model is exact
PY
then
  pass "tuner --eval: every candidate and the auto dispatcher at untuned shapes, auto = its rule's pick"
else
  fail "tuner --eval"
fi

# ---- b. the report and the progress ----
if [ "$(grep -c '<polyline class="candidate"' "$html")" = 6 ] && [ "$(grep -c 'class="winner"' "$html")" = 6 ] &&
   grep -q '<h3>scale T=f32</h3>' "$html" && grep -q '<h3>scale T=f16</h3>' "$html" &&
   grep -q '>1.177</text>' "$html" && ! grep -q '<script' "$html"; then
  pass "the report: a chart per table, a line per candidate, a winner per shape, the margins"
else
  fail "report"
fi
if grep -qx 'kpack: tune: NVIDIA A100-SXM4-40GB (sm_80, driver CUDA 13.0): 18 measurements of 1 kernel' tune.log &&
   grep -qx 'kpack: tune: 0/18 (0%)' tune.log && grep -q '^kpack: tune: 18/18 measured in [0-9.]*s$' tune.log &&
   grep -qx "kpack: tune: wrote $yaml and $html" tune.log && ! grep -q $'\r' tune.log; then
  pass "progress on stderr: start, end, no carriage returns when not a terminal"
else
  fail "progress"
fi

# ---- c. the harness's protocol ----
./tiny-tune --list > list.json 2>&1
hash=$(sed -n 's/.*manifest_hash: //p' "$yaml")
if grep -qF "{\"kernel\":{\"name\":\"scale\",\"hash\":\"$hash\",\"key\":[\"n\"],\"grid\":[[256,1024,16384]],\"shapes\":3,\"tuned\":[\"BLOCK\"],\"combos\":[\"T=f32\",\"T=f16\"],\"candidates\":[\"BLOCK=64\",\"BLOCK=128\",\"BLOCK=256\"],\"work\":18}}" list.json &&
   [ "$(tail -1 list.json)" = '{"done":{"kernels":1,"work":18}}' ]; then
  pass "tuner --list: the kernel's hash, grid, combinations and candidates"
else
  fail "tuner --list: $(cat list.json)"
fi
./tiny-tune --run --repeats 2 --driver "$fake" > run.json 2>&1
if [ $? = 0 ] && [ "$(grep -c '^{"result":' run.json)" = 18 ] && [ "$(grep -c '^{"progress":' run.json)" = 6 ] &&
   grep -qx '{"result":{"kernel":"scale","combo":1,"shape":2,"candidate":2,"us":2.896,"launches":38}}' run.json &&
   head -1 run.json | grep -q '^{"device":{"name":"NVIDIA A100-SXM4-40GB","ordinal":0,"sm":80,"driver":"CUDA 13.0","l2_bytes":41943040,'; then
  pass "tuner --run: the device, a progress line per shape, a result per measurement"
else
  fail "tuner --run: $(head -3 run.json)"
fi
./tiny-tune --run --kernel nope --driver "$fake" > run.json 2>&1
if [ $? = 1 ] && [ "$(cat run.json)" = '{"error":"--kernel nope: this tuner has no kernel nope with a tune: section (it has: scale)"}' ]; then
  pass "tuner --run --kernel of another kernel: an error line, exit 1"
else
  fail "tuner --kernel nope: $(cat run.json)"
fi

# ---- d. errors write nothing ----
before=$(cat "$yaml" "$html" | cksum)
unchanged() { [ "$(cat "$yaml" "$html" | cksum)" = "$before" ] && [ "$(ls tuning | wc -l)" = 2 ]; }
FAKE_CUDA_TUNE_FREE_BYTES=100000 tune tuning; rc=$?
if [ $rc = 1 ] && [ "$(cat log)" = "kpack: error: scale T=f32 at n=16384: its buffers need 1048576 bytes (16 rotation sets of 65536) and device 0 has 100000 bytes free" ] && unchanged; then
  pass "buffers beyond the free memory: named, before any timing, nothing written"
else
  fail "memory (rc $rc)"
fi
FAKE_CUDA_TUNE_FREE_BYTES=100000 ./tiny-tune --run --driver "$fake" > run.json 2>&1
if [ "$(grep -c '"result"' run.json)" = 0 ]; then pass "the memory check comes before the first measurement"; else fail "measured before the memory check"; fi
FAKE_CUDA_TUNE_FAIL=cuLaunchKernel:701:5 tune tuning; rc=$?
if [ $rc = 1 ] && grep -q '^kpack: error: scale T=f32 BLOCK=64 at n=256: tiny_scale() returned KPACK_ERROR_LAUNCH_FAILED: scale_f32_b64: .*CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)' log &&
   [ "$(grep -c 'error' log)" = 1 ] && unchanged; then
  pass "a launch that fails: kpack's status and detail, nothing written"
else
  fail "launch failure (rc $rc)"
fi
FAKE_CUDA_TUNE_FAIL=cuLibraryGetKernel:209:0 tune tuning; rc=$?
if [ $rc = 1 ] && grep -qx 'kpack: error: scale T=f32 BLOCK=64 at n=256: tiny_scale() returned KPACK_ERROR_NO_BINARY_FOR_DEVICE: scale_f32_b64: device 0 is sm_80; this library has SASS for sm_90 and no PTX' log &&
   unchanged; then
  pass "no SASS for the device: the status and the runtime's detail, nothing written"
else
  fail "no binary (rc $rc)"
fi
tune tuning --kernel nope; rc=$?
if [ $rc = 1 ] && [ "$(cat log)" = "kpack: error: --kernel nope: m/kpack.yaml has no kernel nope" ] && unchanged; then
  pass "--kernel of no kernel: refused before the tuner runs"
else
  fail "--kernel nope (rc $rc)"
fi
"$kpack" tune m/kpack.yaml --tuner ./tiny-tune > log 2>&1; rc=$?
no_dir=$(cat log)
"$kpack" tune m/kpack.yaml --tuner ./tiny-tune -o t --repeats 0 > log 2>&1; rc2=$?
if [ $rc = 2 ] && [ "$no_dir" = "kpack: error: -o is required: the directory of the tuning file" ] && [ $rc2 = 2 ] &&
   [ "$(cat log)" = "kpack: error: --repeats takes a number from 1 to 100000" ] && [ ! -e t ]; then
  pass "command-line errors: kpack: error:, exit 2"
else
  fail "command-line errors (rc $rc, $rc2)"
fi
write_scale "256, 1024, 16384, 65536"
tune tuning; rc=$?
if [ $rc = 1 ] && grep -q "^kpack: error: the tuner ./tiny-tune was built from other manifests than m/kpack.yaml: scale's manifest hash is $hash in the tuner and [0-9a-f]* in m/scale.yaml; rebuild the tuner (e.g. meson compile -C build tiny-tune) and run kpack tune again\$" log &&
   unchanged; then
  pass "a tuner built from other manifests: refused, nothing written"
else
  fail "other manifests (rc $rc)"
fi
write_scale "256, 1024, 16384"

# ---- e. deterministic ----
if tune again --repeats 5 && cmp -s again/nvidia-a100-sxm4-40gb.yaml "$yaml" && cmp -s again/nvidia-a100-sxm4-40gb.html "$html"; then
  pass "a second run writes the same tuning file and report"
else
  fail "second run differs"
fi
cp out/tiny_tune.c first_tune.c
if build_tuner && cmp -s first_tune.c out/tiny_tune.c; then pass "kpack build --tuner writes the same tables again"; else fail "tables differ"; fi

finish
