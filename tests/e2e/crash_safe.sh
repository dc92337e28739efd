#!/usr/bin/env bash
# crash_safe.sh KPACK CUDA_ROOT CRASH_SHIM
#
# kill -9 during `kpack build`, then rebuild: the outputs must equal a clean
# build's, byte for byte, and the cache must hold no poisoned entry.  Both
# ways of running the units are crashed: Ninja edges running `kpack step`
# (the default) and threads inside kpack (--ninja none).
#
# The kills, each followed by check_after_crash:
#   A. the whole tree (kpack, Ninja, the steps, nvcc, cicc, ptxas: every
#      process of the session the script starts kpack in) as soon as a
#      toolkit process runs, and a moment later;
#   B. the whole tree at every rename() any kpack process makes (a complete
#      temporary file about to become an output, a unit's .result, .bin.d
#      or .bin, a cache entry or a fatbin), through the LD_PRELOAD
#      CRASH_SHIM, which counts the renames of `kpack build` and of all its
#      steps together;
#   C. the whole tree in the middle of write() calls (a torn file): every
#      write in place (Ninja's request files) and a sample of the others;
#   D. only the steps of one unit, at each of their renames, or only the
#      toolkit's processes, while Ninja and `kpack build` go on, in a build
#      over the files of an older source: the build must fail, or succeed
#      with the new outputs; never succeed with stale ones.
# After a crash, before the rebuild, every file present under its real name
# must be complete: equal to the clean build's.  Kpack's request files
# (units/*.unit, fatbins/*.pack, build.ninja) are the exception: kpack
# regenerates them, compares and rewrites them before Ninja reads them, so
# they may be torn; after the rebuild they must equal the clean build's.
# Leftovers may only be temporary files (NAME.tmp.*; nvcc's under TMPDIR).
set -u
kpack=$(realpath "$1")
cuda_root=$2
shim=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export TMPDIR=$work/tmp  # nvcc's temporaries, to count what a kill leaves
mkdir -p "$TMPDIR"
passed=0 failed=0 leftovers=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAILED: $1"; }
# A sanitized kpack must tolerate the preload coming before its runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
command -v ninja >/dev/null || { echo "FAILED: ninja is not in PATH"; exit 1; }

# The project: 2 specializations x 1 arch = 2 nvcc units (kept small: the
# crashes below build it about 200 times).  write_kernel DIR VALUE sets the
# kernel's body: 2.0f is the current source, 3.0f the older one of D.
mkdir -p project/m
cat > project/m/kpack.yaml <<'YAML'
package: crash
archs: [sm_80]
kernels: [k.yaml]
YAML
write_kernel() {
  cat > "$1/m/k.cuh" <<CUH
template <int B>
__device__ __forceinline__ void k(int64_t n, float* out) {
  if (threadIdx.x < n) out[threadIdx.x] = B * $2;
}
CUH
}
write_kernel project 2.0f
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

# Every build runs in directory `run` (a copy of project/ or of a state
# built before), so that absolute paths, and the cache keys that pin them,
# are the same in every build; a clean build's tree is then moved aside.
# $mode_args picks how the units run: Ninja (empty) or `--ninja none`.
mode_args=()
# Kill points that crashed a build, per mode, printed at the end so that
# docs/hardening.md quotes a count, not a hand tally.
declare -A kills=([ninja]=0 [none]=0)
count_kill() { kills[$mode]=$((kills[$mode] + 1)); }
build_args=(build m/kpack.yaml --header out/k.h --launcher out/k.c --asm out/k.S --depfile out/k.d
            --work-dir out/work --cache-dir cache --cuda-root "$cuda_root" -j 2 -v)
build_run() {  # -> kpack's exit code; the log in run.log
  (cd run && exec "$kpack" "${build_args[@]}" "${mode_args[@]}") > run.log 2>&1
}
# Starts kpack in `run`, in a session of its own (which then holds Ninja,
# the steps and the toolkit's processes too), in the background; sets $pid,
# which is also the session's id.  Arguments are `env` assignments.
start_run() {
  (cd run && exec env "$@" setsid "$kpack" "${build_args[@]}" "${mode_args[@]}") > run.crash.log 2>&1 &
  pid=$!
}
# The live (not zombie) processes of session $1, as "pid comm" lines.
session_procs() {
  ps -e -o sid=,pid=,stat=,comm= | awk -v s="$1" '$1 == s && $3 !~ /^Z/ { print $2, $4 }'
}
# SIGKILLs every process of session $1 until none is left.
kill_session() {
  local p
  for _ in $(seq 200); do
    p=$(session_procs "$1" | awk '{ print $1 }')
    [ -z "$p" ] && return 0
    kill -9 $p
    sleep 0.01
  done
  fail "processes of session $1 survive: $(session_procs "$1" | tr '\n' ' ')"
}
toolkit_re='^(nvcc|cicc|ptxas|cudafe\+\+|fatbinary|nvlink|gcc|cc1plus)$'
# Waits until a toolkit process runs in session $pid (up to 60 s).
wait_for_toolkit() {
  for _ in $(seq 1200); do
    session_procs "$pid" | awk '{ print $2 }' | grep -Eq "$toolkit_re" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# The files of a tree under their real names, as "md5  path" lines.  Ninja's
# logs (times) are left out; from a unit's .result, the run's id, its time
# and how the unit was obtained (a rebuild takes from the cache what the
# clean build compiled).
digest() {
  (cd "$1" && {
    find out cache -type f ! -name '*.tmp.*' ! -name '.ninja_log' ! -name '.ninja_deps' ! -name '*.result' \
      -print0 2>/dev/null | xargs -0 -r md5sum
    for f in $(find out -name '*.result' ! -name '*.tmp.*' 2>/dev/null); do
      # Without what differs between runs: the run, times and CPU times.
      echo "$(grep -v -E '^ +"(run|seconds|how|cpu|tool_cpu|compile_cpu|startup_cpu|step_cpu|processes)":' "$f" |
        md5sum | cut -c1-32)  $f"
    done
  } | sort -k 2)
}
is_request='(\.unit|\.pack|/build\.ninja)$'
# Before the rebuild: every file under its real name (request files aside)
# is one of the clean build's, complete.  A step's .bin.d, which Ninja
# consumes, is compared with the one a step writes (see $ref.deps).
check_no_torn() {  # ref
  local bad
  bad=$(digest run | grep -Ev "$is_request" | sort | comm -23 - <(sort "$1.digest" "$1.deps"))
  [ -z "$bad" ] && return 0
  echo "  torn or wrong after the crash:"; echo "$bad" | sed 's/^/    /'
  return 1
}
# `run` equals the clean build $1: the same outputs and work files, the
# same contents.  Its cache holds a subset of the clean build's entries, each
# one equal (a rebuild takes a unit by its direct key and so stores no entry
# by its preprocessed key).  $3 = nocu: a build that took every unit from the
# cache wrote no units/*.cu (nvcc's input).
check_equal() {  # ref, when, [nocu]
  local ok=0 skip='^cache/' got bad
  [ "${3:-}" = nocu ] && skip='^cache/|^out/work/units/[^ ]*\.cu '
  got=$(digest run)
  if ! diff <(awk '{ print $2, $1 }' "$1.digest" | grep -Ev "$skip") <(echo "$got" | awk '{ print $2, $1 }' | grep -v '^cache/') \
       > diff.out; then
    echo "  $2: differs from a clean build (< clean, > this):"; sed 's/^/    /' diff.out; ok=1
  fi
  bad=$(echo "$got" | awk '$2 ~ /^cache\// { print }' | sort | comm -23 - <(sort "$1.digest"))
  [ -z "$bad" ] || { echo "  $2: cache entries not in a clean build's cache:"; echo "$bad" | sed 's/^/    /'; ok=1; }
  # Ninja's logs are part of a Ninja build's state; a crash must not lose them.
  [ ${#mode_args[@]} -gt 0 ] || [ -f run/out/work/.ninja_log ] || { echo "  $2: no .ninja_log"; ok=1; }
  return $ok
}
count_leftovers() {
  leftovers=$((leftovers + $(find run "$TMPDIR" -mindepth 1 \( -name '*.tmp.*' -o -path "$TMPDIR/*" \) -prune | wc -l)))
  rm -rf "${TMPDIR:?}"/*
}

# After a crash in `run`: the rebuild equals the clean build $1, and a second
# rebuild does nothing (Ninja: every unit up to date; threads: every unit
# from the cache) with the same result.  $3 = torn: first check that no
# file under a real name is torn.
check_after_crash() {  # ref, what, [torn]
  local ok=1 noop
  if [ "${3:-}" = torn ] && ! check_no_torn "$1"; then ok=0; fi
  if ! build_run; then echo "  rebuild failed:"; sed 's/^/  | /' run.log; ok=0; fi
  check_equal "$1" "the rebuild" || ok=0
  noop='2 units: 0 compiled, 0 from cache, 2 up to date'
  [ ${#mode_args[@]} -gt 0 ] && noop='2 units: 0 compiled, 2 from cache'
  build_run && grep -q "$noop" run.log || { echo "  second rebuild (want '$noop'):"; sed 's/^/  | /' run.log; ok=0; }
  check_equal "$1" "the second rebuild" || ok=0
  count_leftovers
  if [ $ok = 1 ]; then pass "$2"; else fail "$2"; sed 's/^/  crash log | /' run.crash.log 2>/dev/null | tail -20; fi
  rm -rf run run.log run.crash.log
}

# Runs kpack in `run` under the shim at KPACK_CRASH_AT=$1 (more env after)
# and waits; sets $rc and $reached (the count the shim got to).
counter=$work/counter
crash_run() {
  local at=$1; shift
  head -c 8 /dev/zero > "$counter"
  start_run LD_PRELOAD="$shim" KPACK_CRASH_AT="$at" KPACK_CRASH_COUNTER="$counter" "$@"
  wait "$pid" 2>/dev/null
  rc=$?
  kill_session "$pid" 2>/dev/null
  reached=$(od -An -t d8 "$counter" | tr -d ' ')
}
# A build that exits 0 has the current source's outputs.
check_outcome() {  # what
  [ $rc -eq 0 ] || return 0
  for f in out/k.h out/k.c out/k.S out/k.d; do
    cmp -s "$ref/$f" "run/$f" || { fail "$1: kpack build exited 0 with stale outputs ($f)"; sed 's/^/  | /' run.crash.log; return; }
  done
}

for mode in ninja none; do
  if [ $mode = ninja ]; then mode_args=(); else mode_args=(--ninja none); fi
  echo "== units run by: $mode (at $SECONDS s)"
  ref=ref_$mode

  # The clean build everything is compared with.
  cp -r project run
  if build_run && grep -q '2 units: 2 compiled, 0 from cache' run.log; then
    pass "$mode: a clean build compiles 2 units"
  else
    fail "$mode: clean build"; cat run.log; exit 1
  fi
  digest run > "$ref.digest"
  : > "$ref.deps"
  if [ $mode = ninja ]; then
    # The depfiles the steps write and Ninja consumes: rerun the steps (one:
    # both specializations are one batch, one nvcc run).
    for u in run/out/work/units/*.unit; do
      u=out/work/units/$(basename "$u")
      (cd run && "$kpack" step "$u" && md5sum "${u%.unit}.bin.d") >> "$ref.deps" || fail "kpack step $u"
    done
    [ "$(wc -l < "$ref.deps")" -eq 1 ] && [ -f run/out/work/units/k.batch-all.sm_80.unit ] ||
      fail "the batch's step wrote no depfile"
  fi
  mv run "$ref"

  # A. During compile: the whole tree.
  for delay in 0 0.4; do
    cp -r project run
    start_run
    if wait_for_toolkit; then
      sleep "$delay"
      kill_session "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      rc=$?
      [ $rc -eq 137 ] || fail "$mode: kpack was not killed at +$delay s (exit $rc): the build ended first"
      [ $rc -eq 137 ] && count_kill
      check_after_crash "$ref" "$mode: kill -9 of the tree during compile (+$delay s after the first toolkit process)" torn
    else
      wait "$pid"; fail "$mode: no toolkit process seen to kill"; cat run.crash.log; rm -rf run
    fi
  done

  # B. At every rename, counted over kpack and its steps.  The package's
  #    two specializations are one batch (one nvcc run).  Ninja: the
  #    batch's TU, 2 cache entries of 2 files, .result, .bin.d and .bin; the
  #    fatbin and its .result; then 4 outputs (14).  Threads: the TU, 2
  #    cache entries, the cubin for fatbinary and the fatbin; 4 outputs.
  crashed=0 ended=0
  for n in $(seq 1 40); do
    cp -r project run
    crash_run "rename:$n"
    if [ "$reached" -lt "$n" ]; then  # past the last rename: the build ran to its end
      [ $rc -eq 0 ] && check_equal "$ref" "a build under the shim" && ended=1
      rm -rf run run.log run.crash.log
      break
    fi
    [ $rc -eq 137 ] || fail "$mode: kpack exited $rc, not killed, at rename $n"
    crashed=$((crashed + 1)); count_kill
    check_after_crash "$ref" "$mode: kill -9 of the tree at rename $n" torn
  done
  min=$([ $mode = ninja ] && echo 14 || echo 11)
  [ $ended = 1 ] || fail "$mode: the rename sweep never reached a build that ran to its end"
  [ $crashed -ge $min ] && pass "$mode: crashed at each of the $crashed renames of a cold build" ||
    fail "$mode: only $crashed rename crash points (want >= $min)"

  # C. In the middle of writes.  Ninja: 1-5 are the request files (in
  #    place), then the batch's and the outputs'.  Threads: all to
  #    temporary files.
  if [ $mode = ninja ]; then points='1 2 3 4 5 8 14'; else points='1 6 11'; fi
  crashed=0
  for n in $points; do
    cp -r project run
    crash_run "write:$n"
    if [ "$reached" -lt "$n" ]; then rm -rf run run.log run.crash.log; break; fi
    [ $rc -eq 137 ] || fail "$mode: kpack exited $rc, not killed, at write $n"
    crashed=$((crashed + 1)); count_kill
    check_after_crash "$ref" "$mode: kill -9 of the tree in the middle of write $n" torn
  done
  [ $crashed -eq $(echo $points | wc -w) ] && pass "$mode: crashed in $crashed writes" || fail "$mode: only $crashed of the write crash points ($points)"

  # D. Only the steps of one unit, or only the toolkit, killed; the build
  #    goes on.  From the state a build of the older source left (its
  #    outputs, units, fatbins and Ninja logs; not its cache entries, which
  #    a clean build lacks), the current source is built.
  cp -r project run
  write_kernel run 3.0f
  build_run || { fail "$mode: the build of the older source"; cat run.log; }
  cmp -s run/out/k.S "$ref/out/k.S" && fail "$mode: the older source builds the same outputs (the test is void)"
  write_kernel run 2.0f
  rm -rf run/cache
  mv run "old_$mode"
  if [ $mode = ninja ]; then
    # The batch's step (k_b1 and k_b2, one nvcc run): the TU, 4 cache
    # files, .result, .bin.d, .bin; its fatbin step: the fatbin, .result.
    crashed=0
    for n in $(seq 1 20); do
      cp -r "old_$mode" run
      crash_run "rename:$n" KPACK_CRASH_WHO=step:k.batch-all. KPACK_CRASH_KILL=self
      if [ "$reached" -lt "$n" ]; then rm -rf run run.log run.crash.log; break; fi
      crashed=$((crashed + 1)); count_kill
      [ $rc -ne 0 ] || fail "$mode: kpack build exited 0 although a step of the batch was killed at its rename $n"
      check_outcome "$mode: kill -9 of a step of the batch at its rename $n"
      check_after_crash "$ref" "$mode: kill -9 of only a step of the batch at its rename $n (build exit $rc)"
    done
    [ $crashed -ge 8 ] && pass "$mode: killed the batch's steps at each of their $crashed renames" ||
      fail "$mode: only $crashed step rename points (want >= 8)"
  fi
  cp -r "old_$mode" run
  start_run
  if wait_for_toolkit; then
    for _ in $(seq 1000); do  # every toolkit process, until kpack ends
      p=$(session_procs "$pid" | awk -v re="$toolkit_re" '$2 ~ re { print $1 }')
      [ -n "$p" ] && kill -9 $p 2>/dev/null
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.02
    done
    wait "$pid"
    rc=$?
    count_kill
    [ $rc -ne 0 ] || fail "$mode: kpack build succeeded although every toolkit process was killed"
    check_outcome "$mode: kill -9 of the toolkit processes"
    check_after_crash "$ref" "$mode: kill -9 of only the toolkit processes (build exit $rc)"
  else
    wait "$pid"; fail "$mode: no toolkit process seen to kill"; rm -rf run
  fi
  rm -rf "old_$mode"
done

# E. Cache entries damaged behind kpack's back are detected by their hash
#    and recompiled, not used; the recompile repairs them.
echo "== the cache (at $SECONDS s)"
mode_args=()
cp -r ref_ninja run
rm -rf run/out/work
for bin in $(find run/cache -name '*.bin'); do
  printf 'garbage' | dd of="$bin" bs=1 seek=16 conv=notrunc 2>/dev/null
done
if build_run && grep -q '2 units: 2 compiled, 0 from cache' run.log && check_equal ref_ninja "after damaged cache entries" &&
   [ "$(find run/cache -type f | wc -l)" -eq "$(grep -c '^[0-9a-f]*  cache/' ref_ninja.digest)" ]; then
  pass "damaged cache entries are recompiled, and the outputs and the cache equal a clean build's"
else
  fail "damaged cache entries"; cat run.log
fi
rm -rf run
# And a build with a fresh work directory takes every unit from the cache,
# with the same outputs (the crashes' caches were compared entry by entry).
cp -r ref_ninja run
rm -rf run/out/work
if build_run && grep -q '2 units: 0 compiled, 2 from cache' run.log && check_equal ref_ninja "from the cache" nocu; then
  pass "a fresh work directory takes every unit from the cache, with the same outputs"
else
  fail "fresh work directory"; cat run.log
fi
rm -rf run

echo "note: the crashes left $leftovers temporary files (never read; safe to delete); $SECONDS s"
echo "kill points: ninja ${kills[ninja]}, in-process ${kills[none]}, total $((kills[ninja] + kills[none]))"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
