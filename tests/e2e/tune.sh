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
#   c. the harness's own protocol (--list, --run): the grid's shapes, then
#      the probe shapes between its values (n = 528 and 4112);
#   d. errors write nothing and leave an earlier file as it was: a tuner
#      built from other manifests, buffers beyond the device's free memory
#      (found before anything is timed), a launch that fails, no SASS for
#      the device, a --kernel the package does not tune;
#   e. a second run writes the same bytes;
#   f. with Triton installed (else skipped): a Triton kernel with
#      `divisibility: auto` params is also timed as its unaligned twin
#      wherever its as-is launch ran the aligned variant.
#
#   tune.sh KPACK CUDA_ROOT SOURCE_ROOT FAKE_CUDA_SO [PYTHON]
set -u
here=$(cd "$(dirname "$0")" && pwd)
kpack=$(realpath "$1")
cuda_root=$2
src=$(realpath "$3")
fake=$(realpath "$4")
python=${5:-python3}
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
  for f in kpack_runtime driver errors workspace tensor_map; do
    cc -std=c11 -O1 -I"$src/runtime" -I"$cuda_root/include" -c "$src/runtime/$f.c" -o "out/$f.o" >> log 2>&1 || return 1
  done
  cc -c out/tiny.S -o out/tiny_fatbins.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -Iout -c out/tiny.c -o out/tiny_launch.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -I"$src/compiler" -Iout -c out/tiny_tune.c \
      -o out/tiny_tune.o >> log 2>&1 &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -I"$src/compiler" -I"$cuda_root/include" \
      -c "$src/compiler/kpack_tune_main.c" -o out/tune_main.o >> log 2>&1 &&
    cc -o tiny-tune out/tune_main.o out/tiny_tune.o out/tiny_launch.o out/tiny_fatbins.o out/kpack_runtime.o \
      out/driver.o out/errors.o out/workspace.o out/tensor_map.o -ldl -lpthread -lm >> log 2>&1
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
# 2 + 0.01 * ceil(n / BLOCK) + 0.001 * BLOCK; the grid's shapes, then the
# probes between them (528, 4112).
expected=$(for n in 256 1024 16384 528 4112; do
  for b in 64 128 256; do echo "$n $b $(awk -v n=$n -v b=$b 'BEGIN { printf "%.6f", 2 + 0.01 * int((n + b - 1) / b) + 0.001 * b }')"; done |
    sort -k3,3g | head -1 | awk '{ print "n=" $1 " BLOCK=" $2 }'
done)
got=$(sed -n 's/^ *- {n: \([0-9]*\), best: "\(BLOCK=[0-9]*\)".*/n=\1 \2/p' "$yaml" | head -5)
if [ -n "$expected" ] && [ "$got" = "$expected" ] &&
   [ "$(sed -n 's/^ *- {n: \([0-9]*\), best: "\(BLOCK=[0-9]*\)".*/n=\1 \2/p' "$yaml" | tail -5)" = "$expected" ] &&
   [ "$(grep -c '^        probes:$' "$yaml")" = 2 ]; then
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
# 18 at the grid's shapes and 12 at the probes'.
if grep -qx 'kpack: tune: NVIDIA A100-SXM4-40GB (sm_80, driver CUDA 13.0): 30 measurements of 1 kernel' tune.log &&
   grep -qx 'kpack: tune: 0/30 (0%)' tune.log && grep -q '^kpack: tune: 30/30 measured in [0-9.]*s$' tune.log &&
   grep -qx "kpack: tune: wrote $yaml and $html" tune.log && ! grep -q $'\r' tune.log; then
  pass "progress on stderr: start, end, no carriage returns when not a terminal"
else
  fail "progress"
fi

# ---- c. the harness's protocol ----
./tiny-tune --list > list.json 2>&1
hash=$(sed -n 's/.*manifest_hash: //p' "$yaml")
if grep -qF "{\"kernel\":{\"name\":\"scale\",\"hash\":\"$hash\",\"key\":[\"n\"],\"grid\":[[256,1024,16384]],\"shapes\":3,\"probes\":[[528,4112]],\"probe_shapes\":2,\"unaligned\":false,\"tuned\":[\"BLOCK\"],\"combos\":[\"T=f32\",\"T=f16\"],\"candidates\":[\"BLOCK=64\",\"BLOCK=128\",\"BLOCK=256\"],\"work\":30}}" list.json &&
   [ "$(tail -1 list.json)" = '{"done":{"kernels":1,"work":30}}' ]; then
  pass "tuner --list: the kernel's hash, grid, probes, combinations and candidates; no unaligned twins"
else
  fail "tuner --list: $(cat list.json)"
fi
./tiny-tune --run --repeats 2 --driver "$fake" > run.json 2>&1
if [ $? = 0 ] && [ "$(grep -c '^{"result":' run.json)" = 30 ] && [ "$(grep -c '^{"progress":' run.json)" = 10 ] &&
   grep -qx '{"result":{"kernel":"scale","combo":1,"shape":2,"variant":0,"candidate":2,"us":2.896,"launches":38}}' run.json &&
   grep -qx '{"progress":{"kernel":"scale","combo":1,"shape":4,"variant":0}}' run.json &&
   head -1 run.json | grep -q '^{"device":{"name":"NVIDIA A100-SXM4-40GB","ordinal":0,"sm":80,"driver":"CUDA 13.0","l2_bytes":41943040,"num_sms":108,"free_bytes":[0-9]*,"total_bytes":[0-9]*,"repeats":2,"work":30}}$'; then
  pass "tuner --run: the device, a progress line per shape, a result per measurement"
else
  fail "tuner --run: $(head -3 run.json)"
fi
# Every result's time is the cost model's at its shape's n: shape S < 3 of
# the grid, then the probes, as --list gives them; each (combination,
# shape) in order, the grid's first.
if python3 - list.json run.json > log 2>&1 <<'PY'
import json, math, sys
kernel = [json.loads(l)["kernel"] for l in open(sys.argv[1]) if '"kernel"' in l][0]
ns = kernel["grid"][0] + kernel["probes"][0]
assert ns == [256, 1024, 16384, 528, 4112], ns
seen = []
for line in open(sys.argv[2]):
    rec = json.loads(line).get("result")
    if not rec:
        continue
    n, block = ns[rec["shape"]], [64, 128, 256][rec["candidate"]]
    want = 2 + 0.01 * math.ceil(n / block) + 0.001 * block
    assert abs(rec["us"] - want) < 1e-3, (rec, want)
    assert rec["variant"] == 0, rec
    if (rec["combo"], rec["shape"]) not in seen:
        seen.append((rec["combo"], rec["shape"]))
assert seen == [(c, s) for c in (0, 1) for s in range(5)], seen
PY
then
  pass "tuner --run: results at the probe shapes (3: n=528, 4: n=4112) after the grid's, at the probes' n"
else
  fail "tuner --run at probe shapes"
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

# ---- f. unaligned twins: a Triton kernel whose launcher runs an aligned
# variant when x, out and n are multiples of 16 ----
if ! "$python" -c 'import triton' 2> /dev/null; then
  echo "Triton is not installed for $python: unaligned twins skipped"
  finish
  exit
fi
mkdir -p tri/m
cat > tri/m/kpack.yaml <<'YAML'
package: tri
archs: [sm_80]
kernels: [dbl.yaml]
YAML
cat > tri/m/dbl.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def dbl(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) * 2, mask=mask)
PY
# n = 1000 is not a multiple of 16: its as-is launches run the unaligned
# variant and it has no twin; 256, 16384 and the probes 496 and 4048 do.
cat > tri/m/dbl.yaml <<'YAML'
kernel: dbl
language: triton
source: dbl.py
entry: dbl
variants: each
constexprs:
  - {name: T, type: dtype, values: [f16]}
  - {name: BLOCK, type: int, values: [64, 256], tag: b, auto: "n < 4096 ? 64 : 256"}
params:
  - {name: x, type: const T*, divisibility: auto}
  - {name: out, type: T*, divisibility: auto}
  - {name: n, type: i32, divisibility: auto}
launch:
  grid: ["cdiv(n, BLOCK)"]
tune:
  key: [n]
  shapes: {n: [256, 1000, 16384]}
  buffers: {x: n, out: n}
YAML
build_tri() {
  (cd tri &&
    "$kpack" build m/kpack.yaml --header out/tri.h --launcher out/tri.c --asm out/tri.S --work-dir work \
      --tuner out/tri_tune.c --cuda-root "$cuda_root" --python "$python" --quiet &&
    cc -c out/tri.S -o out/tri_fatbins.o &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -Iout -c out/tri.c -o out/tri_launch.o &&
    cc -std=c11 -Wall -Wextra -Werror -I"$src/runtime" -I"$src/compiler" -Iout -c out/tri_tune.c -o out/tri_tune.o &&
    cc -o tri-tune ../out/tune_main.o out/tri_tune.o out/tri_launch.o out/tri_fatbins.o ../out/kpack_runtime.o \
      ../out/driver.o ../out/errors.o ../out/workspace.o ../out/tensor_map.o -ldl -lpthread -lm) > log 2>&1
}
if build_tri; then pass "the harness of a Triton kernel with aligned variants compiles with -Werror and links"; else fail "build the Triton harness"; finish; exit; fi
./tri/tri-tune --list > tri/list.json 2>&1
./tri/tri-tune --run --repeats 2 --driver "$fake" > tri/run.json 2>&1; rc=$?
if [ $rc = 0 ] && python3 - tri/list.json tri/run.json > log 2>&1 <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
kernel = [l["kernel"] for l in lines if "kernel" in l][0]
assert kernel["unaligned"] is True and kernel["probe_shapes"] == 2, kernel
ns = kernel["grid"][0] + kernel["probes"][0]
assert ns == [256, 1000, 16384, 496, 4048], ns
twin = [n % 16 == 0 for n in ns]
# Both candidates at every shape, again as the twin where aligned.
assert kernel["work"] == sum(2 * (2 if t else 1) for t in twin), kernel
assert lines[-1] == {"done": {"kernels": 1, "work": kernel["work"]}}, lines[-1]
run = [json.loads(l) for l in open(sys.argv[2])]
assert run[0]["device"]["work"] == kernel["work"], run[0]
assert run[-1] == {"done": {"results": kernel["work"]}}, run[-1]
# Per shape: the as-is launches (variant 0 where aligned, else 1), then
# the twin (variant 1) of an aligned one, each after its progress line,
# each candidate at the time of the cost model (128 threads a block).
want, got = [], []
for s, n in enumerate(ns):
    for v in ([0, 1] if twin[s] else [1]):
        want.append(("progress", s, v))
        for c, block in enumerate([64, 256]):
            want.append(("result", s, v, c, round(2 + 0.01 * math.ceil(n / block) + 0.128, 3)))
for rec in run[1:-1]:
    (kind, body), = rec.items()
    assert body["kernel"] == "dbl" and body["combo"] == 0, rec
    key = (kind, body["shape"], body["variant"])
    got.append(key + ((body["candidate"], round(body["us"], 3)) if kind == "result" else ()))
assert got == want, (got, want)
PY
then
  pass "a Triton kernel: aligned shapes timed as-is (variant 0) and as the unaligned twin (variant 1), others as-is (1)"
else
  fail "unaligned twins (rc $rc): $(head -3 tri/run.json)"
fi
(cd tri && "$kpack" tune m/kpack.yaml --tuner ./tri-tune -o tuning --driver "$fake" --repeats 3) > log 2>&1; rc=$?
if [ $rc = 0 ] && grep -qx 'kpack: tune: NVIDIA A100-SXM4-40GB (sm_80, driver CUDA 13.0): 18 measurements of 1 kernel' log &&
   grep -qx '        variant: unaligned' tri/tuning/nvidia-a100-sxm4-40gb.yaml; then
  pass "kpack tune reads the twins' lines: a table of the unaligned variant"
else
  fail "kpack tune of the Triton kernel (rc $rc)"
fi

finish
