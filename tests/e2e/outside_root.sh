#!/usr/bin/env bash
# kpack's --allow-outside-root flag, through the real binary: a manifest
# naming a source or an include path outside the project root is refused
# with a located error and exit 1, and the flag (and only the flag) lets
# the same command succeed.  `kpack header` needs no CUDA toolkit.
set -u
kpack=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
. "$(dirname "$0")/checks.sh"

mkdir -p project elsewhere
cat > project/kpack.yaml <<'YAML'
package: e2e
archs: [sm_80]
kernels: [k.yaml]
YAML
cat > elsewhere/k.cuh <<'CUH'
template <int B>
__device__ __forceinline__ void k(int64_t n, float* out) {}
CUH
cat > project/k.yaml <<'YAML'
kernel: k
source: ../elsewhere/k.cuh
entry: k
constexprs:
  - {name: B, type: int, values: [1], tag: b}
params:
  - {name: n, type: i64}
  - {name: out, type: f32*}
launch: {grid: 1, block: 32}
nvcc_flags: [-I, elsewhere]
YAML
# nvcc, like kpack, resolves flag paths from where kpack runs, not from the
# manifest: `elsewhere` here is $work/elsewhere, outside --root project.
outside="is outside the project root 'project' (kpack reads only files inside the project; pass --allow-outside-root to lift this)"

# Without the flag: both paths refused, located, nothing written.
"$kpack" header project/kpack.yaml --root project --header out/e2e.h > log 2>&1; rc=$?
expected="project/k.yaml:2:9: error: source file '../elsewhere/k.cuh' $outside
project/k.yaml:10:18: error: nvcc flag '-I' path 'elsewhere' $outside"
if [ $rc -eq 1 ] && [ "$(cat log)" = "$expected" ] && [ ! -e out/e2e.h ]; then
  pass "paths outside the root are refused, located, with no output"
else
  fail "refusal (rc=$rc)"; cat log
fi

# With it: the same command succeeds and the header is written.
"$kpack" header project/kpack.yaml --root project --header out/e2e.h --allow-outside-root > log 2>&1; rc=$?
if [ $rc -eq 0 ] && [ ! -s log ] && grep -q 'e2e_k_b1' out/e2e.h; then
  pass "--allow-outside-root lifts it"
else
  fail "--allow-outside-root (rc=$rc)"; cat log
fi

# A root that contains both (--root) needs no flag.
rm -rf out
"$kpack" header project/kpack.yaml --header out/e2e.h --root . > log 2>&1; rc=$?
[ $rc -eq 0 ] && [ -s out/e2e.h ] && pass "--root . widens the project" || { fail "--root (rc=$rc)"; cat log; }

finish
