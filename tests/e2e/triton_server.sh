#!/usr/bin/env bash
# End to end for the Triton compiler processes (compiler/triton_server.h)
# through the real kpack, Python and Triton: a package of two Triton
# kernels builds byte-identically with a compiler process per slot and
# with one process per unit (KPACK_TRITON_SERVER=0), through Ninja and on
# threads; no compiler process outlives the build; a process killed (-9)
# while it compiles is reported and the unit retried; a compile that hangs
# is killed after --triton-timeout, twice, and fails only its unit; a
# compile error reads as with one process per unit.
set -u
kpack=$(realpath "$1")
cuda_root=$2
python=${3:-python3}
if ! "$python" -c 'import triton' 2>/dev/null; then
  echo "Triton is not installed for $python: skipped"
  exit 77
fi
helper=$(dirname "$kpack")/triton_helper.py
checks=$(realpath "$(dirname "$0")/checks.sh")
work=$(mktemp -d)
trap 'pkill -9 -f "$work/" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
. "$checks"

mkdir -p m
printf 'package: ts\narchs: [sm_80, sm_90]\nkernels: [add.yaml, sub.yaml]\n' > m/kpack.yaml
cat > m/ops.py <<'PY'
import triton
import triton.language as tl


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def sub(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) - tl.load(y + offs, mask=mask), mask=mask)
PY
for k in add sub; do
  cat > m/$k.yaml <<YAML
kernel: $k
language: triton
source: ops.py
entry: $k
variants: none
constexprs:
  - {name: T, type: dtype, values: [f16]}
  - {name: BLOCK, type: int, values: [1024], tag: b}
  - {name: num_warps, type: int, values: [4, 8], tag: w}
params:
  - {name: x, type: const T*, divisibility: 16}
  - {name: y, type: const T*, divisibility: 16}
  - {name: out, type: T*, divisibility: 16}
  - {name: n, type: i32}
launch:
  grid: ["cdiv(n, BLOCK)"]
YAML
done

# The real helper, but the compile of sub's num_warps=4 build for sm_80
# waits to be killed (WRAP=kill, the first time: it writes its pid to
# victim.pid), or hangs (WRAP=hang, every time).
cat > wrap.py <<PY
import json, os, sys, time
sys.path.insert(0, os.path.dirname("$helper"))
import triton_helper
real = triton_helper.compile_kernel


def compile_kernel(request_path, cubin, meta):
    with open(request_path) as f:
        r = json.load(f)
    target = r["entry"] == "sub" and r["arch"] == 80 and r["options"]["num_warps"] == 4
    if target and os.environ.get("WRAP") == "kill" and not os.path.exists("$work/victim.pid"):
        with open("$work/victim.pid.tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename("$work/victim.pid.tmp", "$work/victim.pid")
        time.sleep(120)
    if target and os.environ.get("WRAP") == "hang":
        time.sleep(1000)
    return real(request_path, cubin, meta)


triton_helper.compile_kernel = compile_kernel
sys.exit(triton_helper.main(sys.argv))
PY

# build OUT WORK [options]: a fresh build into OUT and WORK; log in OUT.log.
build() {
  local out=$1 w=$2
  shift 2
  rm -rf "$out" "$w"
  "$kpack" build m/kpack.yaml --header "$out/ts.h" --launcher "$out/ts.c" --asm "$out/ts.S" --work-dir "$w" \
    --cuda-root "$cuda_root" --python "$python" -j 2 --quiet -v --perf "$@" > "$out.log" 2>&1
}

# same A B: the two builds' units, fatbins and generated files are equal
# (the .S names its work directory).
same() {
  local f
  for f in "$2"/units/*.bin "$2"/fatbins/*.fatbin; do
    [[ $f == */units/* && ! -e "$3/${f#"$2"/}" ]] && continue  # --ninja none writes no unit files
    cmp -s "$f" "$3/${f#"$2"/}" || { echo "differs: $f"; return 1; }
  done
  cmp -s "$1/ts.c" "$4/ts.c" && cmp -s "$1/ts.h" "$4/ts.h" || { echo "differs: ts.c or ts.h"; return 1; }
}

# No compiler process of work directory $1 is left, nor its pid or socket.
none_left() {
  ! pgrep -f "$work/$1/triton/slot-" > /dev/null && ! ls "$1"/triton/*.pid "$1"/triton/*.sock 2> /dev/null | grep -q .
}

# 1. Byte-identical with a process per unit; nothing left running.
KPACK_TRITON_SERVER=0 build ref wref; rc=$?
[ $rc -eq 0 ] && grep -q '8 units: 8 compiled, 0 from cache' ref.log || { fail "one process per unit (rc=$rc)"; cat ref.log; }
build a wa; rc=$?
if [ $rc -eq 0 ] && grep -q '8 units: 8 compiled, 0 from cache' a.log && same ref wref wa a \
   && grep -q '^kpack: cpu Triton .* 8 units, .* 2 compiler processes started' a.log \
   && [ "$(ls wa/units/*.bin | wc -l)" = 8 ]; then
  pass "a compiler process per slot builds byte-identical units and fatbins, 2 processes for 8 units"
else
  fail "server build (rc=$rc)"; cat a.log
fi
none_left wa && pass "no compiler process outlives kpack build" || { fail "servers left"; pgrep -af "$work/wa/triton"; ls wa/triton; }
build b wb --ninja none; rc=$?
if [ $rc -eq 0 ] && same ref wref wb b && [ "$(ls wb/fatbins/*.fatbin | wc -l)" = 4 ] && none_left wb; then
  pass "on threads (--ninja none): byte-identical, no compiler process left"
else
  fail "--ninja none (rc=$rc)"; cat b.log
fi

# 2. kill -9 of the process while it compiles: one line, the unit retried.
label="kernel 'sub' specialization sub_f16_b1024_w4 (T=f16, BLOCK=1024, num_warps=4) for sm_80"
rm -f victim.pid
WRAP=kill build c wc --triton-helper "$work/wrap.py" &
builder=$!
for _ in $(seq 600); do [ -s victim.pid ] && break; sleep 0.1; done
victim=$(cat victim.pid 2>/dev/null)
[ -n "$victim" ] && kill -9 "$victim"
wait $builder; rc=$?
if [ -n "$victim" ] && [ $rc -eq 0 ] && same ref wref wc c \
   && [ "$(grep -c 'retrying once' c.log)" = 1 ] \
   && grep -qxF "kpack: the Triton compiler process (pid $victim) died while compiling $label; retrying once in a fresh process" c.log \
   && none_left wc; then
  pass "a compiler process killed while compiling: reported once, the unit retried, the same outputs"
else
  fail "kill -9 (rc=$rc, victim=$victim)"; cat c.log
fi

# 3. A compile that hangs: killed after --triton-timeout, twice; only its
# unit fails (the other seven are built) and the build exits 1.
WRAP=hang build d wd --triton-helper "$work/wrap.py" --triton-timeout 3; rc=$?
if [ $rc -eq 1 ] && grep -q "^m/sub.yaml:[0-9]*:[0-9]*: error: Triton failed (timed out twice after 3 s) for $label\$" d.log \
   && grep -qF "did not finish compiling $label in 3 s and was killed; retrying once in a fresh process" d.log \
   && [ "$(grep -c 'error:' d.log)" = 1 ] \
   && [ "$(ls wd/units/*.bin | wc -l)" = 7 ] && [ ! -e wd/units/sub_f16_b1024_w4.sm_80.bin ] && none_left wd; then
  pass "a hung compile is killed after --triton-timeout, twice, and fails only its unit"
else
  fail "hang (rc=$rc)"; cat d.log; ls wd/units/*.bin
fi

# 4. Triton's compile error reads as with a process per unit (but for the
# step's pid in the temporary names of the command line): kpack's report,
# without Ninja's lines (in the order the steps ended) and --perf's.
sed -i 's/tl.arange(0, BLOCK)/tl.arange(0, BLOCK - 1)/' m/ops.py
KPACK_TRITON_SERVER=0 build e1 we; rc1=$?
build e2 we; rc2=$?
strip() {
  grep -v -e '^FAILED: ' -e '^ninja: ' -e ' step we/units/' -e '^kpack: ' "$1" | sed 's/\.tmp\.[0-9]*/.tmp.PID/g'
}
if [ $rc1 -eq 1 ] && [ $rc2 -eq 1 ] && [ "$(strip e1.log)" = "$(strip e2.log)" ] \
   && grep -q "^m/add.yaml:1:9: error: Triton failed (exit code 1) for kernel 'add' specialization add_f16_b1024_w4 (T=f16, BLOCK=1024, num_warps=4) for sm_80$" e2.log \
   && [ "$(grep -A1 -x "m/ops.py:7:39: error: arange's range must be a power of 2" e2.log | tail -1)" = "Triton failed to compile add: CompilationError: at 2:38:" ] \
   && grep -q "^note: 3 more unit(s) of kernel 'add' failed with the same output" e2.log && none_left we; then
  pass "Triton's compile error is reported as with a process per unit"
else
  fail "compile error (rc=$rc1/$rc2)"; diff <(strip e1.log) <(strip e2.log); cat e2.log
fi

finish
