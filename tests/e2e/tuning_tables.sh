#!/usr/bin/env bash
# Tuning files through the real binary (docs/tuning.md, "Tuning files and
# decision tables"), on a copy of the tuned test package
# (tests/compiler/manifests/tuned): a build reads them and names them in its
# depfile; `kpack inspect` prints the inventory's decision tables; a
# manifest changed since kpack tune makes them stale, an error at each
# file's manifest_hash, and --allow-stale-tuning (and only it) turns that
# into a warning and a build with the rules; the Meson option
# kpack_allow_stale_tuning passes the flag.
#
#   tuning_tables.sh KPACK CUDA_ROOT SOURCE_DIR
set -u
kpack=$(realpath "$1") cuda_root=$2 src=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$src/tests/e2e/checks.sh"

cp -r "$src/tests/compiler/manifests/tuned" project
build() {  # extra kpack build options
  "$kpack" build project/kpack.yaml --root project --cuda-root "$cuda_root" --ninja none --quiet \
    --header out/tk.h --launcher out/tk_launch.c --asm out/tk.S --work-dir out/work \
    --depfile out/tk.d --inventory out/tk.json "$@" > log 2>&1
}

# A build reads the tuning files; they are in its depfile.
build; rc=$?
[ "$rc" -eq 0 ] && [ ! -s log ] && pass "the tuned package builds, silently" ||
  fail "build: status $rc, output: $(cat log)"
grep -q 'project/tuning/nvidia-h100-80gb-hbm3.yaml' out/tk.d &&
  grep -q 'project/tuning/nvidia-a100-sxm4-80gb.yaml' out/tk.d &&
  pass "the depfile names both tuning files" || fail "depfile: $(cat out/tk.d | tail -5)"
grep -q 'kpack_tuning_select("scale_auto", &kpack_tunings, &kpack_tuning);' out/tk_launch.c &&
  pass "scale_auto selects a tuning" || fail "no kpack_tuning_select in the launchers"

# kpack inspect on the inventory: the tables, readable and as JSON.
"$kpack" inspect out/tk.json > inspect.txt 2>&1; rc=$?
[ "$rc" -eq 0 ] && cmp -s inspect.txt "$src/tests/compiler/golden/tk_tables.txt" &&
  pass "kpack inspect prints the inventory's tables (golden tk_tables.txt)" ||
  fail "kpack inspect: status $rc: $(diff "$src/tests/compiler/golden/tk_tables.txt" inspect.txt | head -20)"
"$kpack" inspect out/tk.json --json > inspect.json 2>&1 &&
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
t = d["kernels"][0]["tuning"]["tables"][0]
assert d["file_kind"] == "inventory" and t["gpu"] == "NVIDIA H100 80GB HBM3" and t["sm"] == 90
assert t["results"][0]["best"] == "BLOCK=128 WIDE=true" and t["results"][0]["margin"] == "1.200"' inspect.json &&
  pass "kpack inspect --json gives the tables" || fail "kpack inspect --json: $(head -c 400 inspect.json)"

# A changed rule: both files are stale.
sed -i 's/auto: "256"}/auto: "128"}/' project/scale.yaml
"$kpack" header project/kpack.yaml --root project --header out/stale.h > log 2>&1; rc=$?
expected="project/tuning/nvidia-h100-80gb-hbm3.yaml:11:20: error: scale was tuned against another version of its manifest (project/scale.yaml); run kpack tune again, or build with --allow-stale-tuning to use its rules
project/tuning/nvidia-a100-sxm4-80gb.yaml:11:20: error: scale was tuned against another version of its manifest (project/scale.yaml); run kpack tune again, or build with --allow-stale-tuning to use its rules"
[ "$rc" -eq 1 ] && [ "$(cat log)" = "$expected" ] && [ ! -e out/stale.h ] &&
  pass "a stale tuning is an error at each file's manifest_hash, nothing written" ||
  fail "stale: status $rc, output: $(cat log)"
build --allow-stale-tuning; rc=$?
expected="project/tuning/nvidia-h100-80gb-hbm3.yaml:11:20: warning: scale's tuning for NVIDIA H100 80GB HBM3 is stale (its manifest changed); the auto dispatcher uses its rules there
project/tuning/nvidia-a100-sxm4-80gb.yaml:11:20: warning: scale's tuning for NVIDIA A100-SXM4-80GB is stale (its manifest changed); the auto dispatcher uses its rules there"
[ "$rc" -eq 0 ] && [ "$(cat log)" = "$expected" ] &&
  pass "--allow-stale-tuning: a warning per file, and the build goes on" ||
  fail "--allow-stale-tuning: status $rc, output: $(cat log)"
# scale's tables are gone (pick's and rows's stay).
[ "$(grep -c 'kpack_tuning_select(' out/tk_launch.c)" = 2 ] &&
  grep -q 'kpack_tuning_select("pick_auto"' out/tk_launch.c && grep -q 'kpack_tuning_select("rows_auto"' out/tk_launch.c &&
  pass "the stale kernel's auto dispatcher is the rules'" || fail "stale tables still generated"
"$kpack" inspect out/tk.json > inspect.txt 2>&1
grep -q '^  NVIDIA H100 80GB HBM3 (sm_90) (tuning/nvidia-h100-80gb-hbm3.yaml): stale (its manifest changed); the rules decide there$' inspect.txt &&
  pass "kpack inspect lists the stale tuning" || fail "kpack inspect: $(cat inspect.txt | head -5)"

# The Meson option reaches the bundled package's kpack build.
argv() {  # build dir name, options
  meson setup "$work/$1" "$src" -Dkpack_exe="$kpack" -Dtests=false -Dbench=false "${@:2}" > "$work/setup.log" 2>&1 ||
    { tail -20 "$work/setup.log"; return; }
  meson introspect --targets "$work/$1" | python3 -c '
import json, sys
[t] = [t for t in json.load(sys.stdin) if t["name"] == "kernels-kpack"]
print("\n".join(t["target_sources"][0]["compiler"]))'
}
argv defaults | grep -qx -- --allow-stale-tuning && fail "the defaults pass --allow-stale-tuning" ||
  pass "the defaults pass no --allow-stale-tuning"
argv stale -Dkpack_allow_stale_tuning=true | grep -qx -- --allow-stale-tuning &&
  pass "-Dkpack_allow_stale_tuning=true passes --allow-stale-tuning" || fail "-Dkpack_allow_stale_tuning=true: not passed"

finish
