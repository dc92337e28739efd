#!/usr/bin/env bash
# crash_safe.sh KPACK CUDA_ROOT CRASH_SHIM
#
# kill -9 during `kpack build`, then rebuild: the outputs must equal a clean
# build's, byte for byte, and the cache must hold no poisoned entry.  The
# whole process group is killed (kpack and the nvcc, cicc and ptxas it
# runs), at several points:
#   - during compile: as soon as a toolkit process runs, and a moment later;
#   - during output writes: at every rename() kpack makes (a complete
#     temporary file about to become an output, a cache entry or a fatbin)
#     and in the middle of write() calls, through the LD_PRELOAD CRASH_SHIM.
# Only the command line is used, so the test holds however kpack schedules
# its work (threads, an inner ninja).  Before each rebuild, every output
# present must already be complete: no torn file under a real name.
set -u
kpack=$(realpath "$1")
cuda_root=$2
shim=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
passed=0 failed=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1"; }
# A sanitized kpack must tolerate the preload coming before its runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

# The project: 2 specializations x 1 arch = 2 nvcc units (kept small: the
# rename sweep below builds it cold about 13 times).
mkdir -p project/m
cat > project/m/kpack.yaml <<'YAML'
package: crash
archs: [sm_80]
kernels: [k.yaml]
YAML
cat > project/m/k.cuh <<'CUH'
template <int B>
__device__ __forceinline__ void k(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B * 2.0f;
}
CUH
cat > project/m/k.yaml <<'YAML'
kernel: k
source: k.cuh
entry: k
constexprs:
  - {name: B, type: int, values: [1, 2], tag: b}
params:
  - {name: n, type: i64}
  - {name: out, type: f32*}
launch: {grid: 1, block: 32}
YAML

# Runs in directory $1 (a copy of project/), so paths and outputs compare.
build_in() {
  (cd "$1" && "$kpack" build m/kpack.yaml --header out/k.h --launcher out/k.c --asm out/k.S \
     --depfile out/k.d --work-dir out/work --cache-dir cache --cuda-root "$cuda_root" -j 2 -v) > "$1.log" 2>&1
}
# The outputs under their real names.  A crash leaves its temporary files
# (NAME.tmp.PID.N) behind; they are never read, and are counted apart.
outputs() {
  (cd "$1" && find out/k.h out/k.c out/k.S out/k.d out/work/fatbins -type f ! -name '*.tmp.*' 2>/dev/null | sort)
}
leftovers=0

cp -r project ref
if build_in ref && grep -q '2 units: 2 compiled, 0 from cache' ref.log; then
  pass "a clean build compiles 2 units"
else
  fail "clean build"; cat ref.log; exit 1
fi
expected=$(outputs ref)

# Starts kpack in a process group of its own, in directory $1; sets $pid.
start_in() {
  (cd "$1" && exec setsid "$kpack" build m/kpack.yaml --header out/k.h --launcher out/k.c --asm out/k.S \
     --depfile out/k.d --work-dir out/work --cache-dir cache --cuda-root "$cuda_root" -j 2 -v) > "$1.crash.log" 2>&1 &
  pid=$!
}

# After a crash in $1: no torn output, then a rebuild equal to ref, then a
# second rebuild served wholly from the cache.
check_after_crash() {
  local dir=$1 what=$2 ok=1 f
  for f in $(outputs "$dir"); do
    cmp -s "ref/$f" "$dir/$f" || { echo "  torn or wrong after the crash: $f"; ok=0; }
  done
  if ! build_in "$dir"; then
    echo "  rebuild failed:"; cat "$dir.log"; ok=0
  fi
  [ "$(outputs "$dir")" = "$expected" ] || { echo "  rebuild output set differs"; ok=0; }
  for f in $(outputs ref); do
    cmp -s "ref/$f" "$dir/$f" || { echo "  rebuild differs from a clean build: $f"; ok=0; }
  done
  build_in "$dir"
  grep -q '2 units: 0 compiled, 2 from cache' "$dir.log" || { echo "  second rebuild:"; cat "$dir.log"; ok=0; }
  leftovers=$((leftovers + $(find "$dir" -name '*.tmp.*' | wc -l)))
  if [ $ok = 1 ]; then pass "$what"; else fail "$what"; fi
  rm -rf "$dir" "$dir.log" "$dir.crash.log"
}

# Waits until a toolkit process runs in group $pid (up to 60 s).
wait_for_toolkit() {
  for _ in $(seq 600); do
    pgrep -g "$pid" -x 'nvcc|cicc|ptxas|cudafe\+\+|fatbinary' >/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# 1. During compile.
for delay in 0 1.5; do
  cp -r project run
  start_in run
  if wait_for_toolkit; then
    sleep "$delay"
    kill -9 -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    check_after_crash run "kill -9 during compile (+${delay} s after the first nvcc)"
  else
    wait "$pid"; fail "no toolkit process seen to kill"; rm -rf run
  fi
done

# 2. During output writes: every rename kpack makes in a cold build.
renames=$(cd ref && find out cache -type f | wc -l)
crashed=0
for n in $(seq 1 "$renames"); do
  cp -r project run
  KPACK_CRASH_AT=rename:$n LD_PRELOAD=$shim start_in run
  wait "$pid" 2>/dev/null
  rc=$?
  if [ $rc -ne 137 ]; then  # past the last rename: the build just finished
    rm -rf run run.crash.log
    break
  fi
  crashed=$((crashed + 1))
  check_after_crash run "kill -9 at rename $n"
done
[ $crashed -ge 8 ] && pass "crashed at $crashed renames" || fail "only $crashed rename crash points"

# 3. In the middle of writes: a sample across the build.
for n in 1 2 3 5 8 13 21; do
  cp -r project run
  KPACK_CRASH_AT=write:$n LD_PRELOAD=$shim start_in run
  wait "$pid" 2>/dev/null
  [ $? -eq 137 ] || { rm -rf run run.crash.log; break; }
  check_after_crash run "kill -9 in the middle of write $n"
done

# 4. A cache entry damaged behind kpack's back is detected by its hash and
#    recompiled, not used.
cp -r ref dmg
bin=$(find dmg/cache -name '*.bin' | head -1)
printf 'garbage' | dd of="$bin" bs=1 seek=16 conv=notrunc 2>/dev/null
if build_in dmg && grep -q '2 units: 1 compiled, 1 from cache' dmg.log && cmp -s ref/out/k.S dmg/out/k.S; then
  pass "a damaged cache entry is recompiled, and the outputs equal a clean build's"
else
  fail "damaged cache entry"; cat dmg.log
fi

echo "note: the crashes left $leftovers temporary files (never read; safe to delete)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
