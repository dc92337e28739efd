#!/usr/bin/env bash
# The newest Triton kpack supports, in .venv-newest's Python (which
# .ci/setup makes; the default build uses .venv's, the oldest): the helper's
# own tests (slice_test.py), then the bundled Triton kernels
# (manifests/*_triton.yaml) and the corpus's Triton packages
# (tests/corpus/run.sh) built with it.  Checks that the builds succeed, that
# the generated launchers compile, that the inventories record that Triton,
# and that kpack inspect reads it back from the fatbins.
# sm_90 only: every Triton kernel of the bundle builds for it, and one arch
# keeps CI's time down.
#
#   newest.sh KPACK CUDA_ROOT SOURCE_ROOT PYTHON [UNIT_CACHE]
#
# Without PYTHON it skips (77), except under CI=true, where .ci/setup has
# made it and its absence is a failure.  UNIT_CACHE (kpack --cache-dir) keeps
# a rerun from compiling again; units are keyed by the Triton version, so
# it may be the default build's.
set -uo pipefail
kpack=$(realpath "$1") cuda_root=$2 root=$(realpath "$3") python=$4 cache=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$python" ]; then
  if [ "${CI:-}" = true ]; then echo "FAILED: no Python at $python (.ci/setup makes .venv-newest)"; exit 1; fi
  echo "no Python at $python (.ci/setup makes .venv-newest): skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$root/tests/e2e/checks.sh"

# The newest minor kpack supports (triton_helper.py's SUPPORTED_TRITON), and
# the Triton this Python has: a stale venv is an error, not a pass.
newest=$("$python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import triton_helper
print(triton_helper.SUPPORTED_TRITON[-1])' "$root/compiler") ||
  { echo "FAILED: $python cannot read compiler/triton_helper.py"; exit 1; }
version=$("$python" -c 'import triton; print(triton.__version__)' 2>&1) ||
  { echo "FAILED: $python has no Triton ($version); rerun .ci/setup"; exit 1; }
if [ "${version%.*}" != "$newest" ]; then
  echo "FAILED: $python has Triton $version, not $newest, the newest kpack supports; rerun .ci/setup"
  exit 1
fi
echo "Triton $version ($python)"

# 0. The helper under this Triton.
if "$python" "$here/slice_test.py" "$root/compiler" > "$work/slice.log" 2>&1; then
  pass "slice_test.py under Triton $version ($(grep -E '^Ran [0-9]+ tests' "$work/slice.log"))"
else
  fail "slice_test.py under Triton $version"; tail -40 "$work/slice.log"
fi

# The inventory's toolchain names this Triton (and nothing is built by
# another).
inventory_says() {  # inventory_says INVENTORY
  "$python" - "$1" "$version" <<'PY'
import json, sys
inventory, version = json.load(open(sys.argv[1])), sys.argv[2]
said = inventory["toolchain"]["triton"]
assert said.startswith("triton %s python " % version), said
assert any(k["language"] == "triton" for k in inventory["kernels"]), "no Triton kernel"
PY
}

# 1. The bundled Triton kernels: a package of every manifests/*_triton.yaml.
{
  echo "package: kernels"
  echo "prefix: kernels"
  echo "archs: [sm_90]"
  echo "max_specializations: 8192"  # matmul_triton's axes, as manifests/kpack.yaml
  echo "kernels:"
  for m in "$root"/manifests/*_triton.yaml; do echo "  - $m"; done
} > "$work/kpack.yaml"
out=$work/bundled
if "$kpack" build "$work/kpack.yaml" --header "$out/kernels.h" --launcher "$out/kernels_launch.c" \
     --asm "$out/kernels_fatbins.S" --work-dir "$out/work" --inventory "$out/kernels.json" --root "$root" \
     --allow-outside-root --cuda-root "$cuda_root" --python "$python" ${cache:+--cache-dir "$cache"} \
     --quiet -v > "$work/bundled.log" 2>&1; then
  pass "the bundled Triton kernels build with Triton $version ($(grep -o '[0-9]* units' "$work/bundled.log" | head -1))"
else
  fail "the bundled Triton kernels with Triton $version"; tail -40 "$work/bundled.log"
fi
if [ -f "$out/kernels.json" ] && inventory_says "$out/kernels.json"; then
  pass "the inventory records Triton $version"
else
  fail "the inventory's Triton"
fi
if cc -c -std=c11 -Wall -Werror -I "$out" -I "$root/runtime" -I "$cuda_root/include" "$out/kernels_launch.c" \
     -o "$out/launch.o" 2> "$work/cc.log" && cc -c "$out/kernels_fatbins.S" -o "$out/fatbins.o" 2>> "$work/cc.log"; then
  pass "the launchers and the embedded fatbins compile"
else
  fail "compiling the generated files"; head -20 "$work/cc.log"
fi
# What kpack inspect reads back from the fatbins' identifiers: every image
# carries this Triton.
if [ -f "$out/fatbins.o" ] && "$kpack" inspect --json "$out/fatbins.o" > "$work/inspect.json" &&
   "$python" - "$work/inspect.json" "$version" <<'PY'
import json, sys
images, version = json.load(open(sys.argv[1]))["images"], sys.argv[2]
assert images and all(i.get("triton_version") == version for i in images), \
    sorted({i.get("triton_version") for i in images}, key=str)
PY
then
  pass "kpack inspect reads Triton $version from every image"
else
  fail "kpack inspect's Triton"; head -c 2000 "$work/inspect.json"
fi

# 2. The corpus's Triton packages, as its own test builds them with the
# default Python (tests/corpus/run.sh: its goals, its left-out kernels, its
# launchers), each inventory checked for this Triton.
KPACK_CORPUS_TRITON=$version KPACK_CORPUS_UNIT_CACHE=$cache KPACK_CORPUS_PACKAGES="liger_kernel fla_core" \
  "$root/tests/corpus/run.sh" "$kpack" "$cuda_root" "$python" > "$work/corpus.log" 2>&1
rc=$?
sed 's/^/  | /' "$work/corpus.log"
case $rc in
  0) pass "the corpus builds with Triton $version" ;;
  77) echo "the corpus is not fetched: not built (tests/corpus/fetch.sh)" ;;
  *) fail "the corpus with Triton $version" ;;
esac
finish
