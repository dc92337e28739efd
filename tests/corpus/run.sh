#!/usr/bin/env bash
# The corpus: other projects' Triton kernels, packaged unchanged from their
# pinned wheels (requirements.txt, fetched by fetch.sh into the corpus
# cache).  For each package it
#   - proves the cached files are the wheel's, byte for byte (its RECORD);
#   - builds the package of manifests this project wrote for its kernels
#     (tests/corpus/<package>/package.yaml), with the wheel's directory on
#     kpack's python path and nothing of it imported;
#   - builds each kernel it leaves out (tests/corpus/<package>/left_out/),
#     which must fail, and prints kpack's first error as the reason;
#   - prints `corpus <package> <version>: N of M kernels packaged unchanged`
#     and fails below the goal (GOALS below).
#
#   run.sh KPACK CUDA_ROOT PYTHON [CACHE]
#
# Without the cache it skips (77), except under CI=true, where .ci/setup has
# fetched it and its absence is a failure.  KPACK_CORPUS_ARCHS (default
# sm_90) chooses the archs: one keeps CI's build time down; the manifests
# name every arch an engine ships.
set -uo pipefail
kpack=$(realpath "$1") cuda_root=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
cache=${4:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
archs=${KPACK_CORPUS_ARCHS:-sm_90}
declare -A GOALS=([liger_kernel]=20 [fla_core]=19)
declare -A MANIFESTS=([liger_kernel]=liger [fla_core]=fla)

if [ ! -d "$cache" ]; then
  if [ "${CI:-}" = true ]; then echo "FAILED: no corpus cache at $cache (.ci/setup fetches it)"; exit 1; fi
  echo "no corpus cache at $cache (tests/corpus/fetch.sh fetches it): skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# Every file of an unpacked wheel against the sha256 in its RECORD.
verify_unchanged() {  # verify_unchanged DIR
  "$python" - "$1" <<'PY'
import base64, csv, glob, hashlib, os, sys
root = sys.argv[1]
records = glob.glob(os.path.join(root, "*.dist-info", "RECORD"))
assert len(records) == 1, "no single RECORD in " + root
checked = 0
with open(records[0], newline="") as f:
    for path, digest, _ in csv.reader(f):
        if not digest:
            continue
        algorithm, _, expected = digest.partition("=")
        with open(os.path.join(root, path), "rb") as g:
            got = base64.urlsafe_b64encode(hashlib.new(algorithm, g.read()).digest()).rstrip(b"=").decode()
        if got != expected:
            sys.exit("%s differs from the wheel" % path)
        checked += 1
print("%d files as in the wheel" % checked)
PY
}

for dir in "$cache"/*-*; do
  [ -d "$dir" ] || continue
  base=$(basename "$dir") name=${base%-*} version=${base##*-}
  manifests=${MANIFESTS[$name]:-}
  [ -n "$manifests" ] || continue
  echo "== $name $version ($dir)"
  if ! verify_unchanged "$dir"; then status=1; continue; fi
  package=$here/$manifests/package.yaml
  out=$work/$manifests
  if "$kpack" build "$package" --header "$out/k.h" --launcher "$out/k.c" --asm "$out/k.S" --work-dir "$out/work" \
       --inventory "$out/k.json" --root "$here" --python-path "$dir" --cuda-root "$cuda_root" --python "$python" \
       --archs "$archs" --quiet -v > "$work/$manifests.log" 2>&1; then
    grep '^kpack: .* units' "$work/$manifests.log"
    # The generated launchers must compile: a consumer builds them.
    if ! cc -c -std=c11 -Wall -Werror -I "$out" -I "$here/../../runtime" -I "$cuda_root/include" "$out/k.c" \
         -o "$out/k.o" 2> "$work/$manifests.cc.log"; then
      echo "FAILED: the $manifests launchers do not compile"; head -20 "$work/$manifests.cc.log"; status=1
    fi
    packaged=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' "$out/k.json")
  else
    echo "FAILED: building the $manifests package"
    cat "$work/$manifests.log"
    status=1
    packaged=0
  fi
  # Each kernel left out must fail to package, for the reason shown (its
  # manifest carries the package's assume: values itself).
  reasons=()
  left=0
  for manifest in "$here/$manifests"/left_out/*.yaml; do
    [ -e "$manifest" ] || continue
    left=$((left + 1))
    kernel=$(basename "$manifest" .yaml)
    single=$work/$manifests-$kernel
    mkdir -p "$single"
    printf 'package: leftout\narchs: [%s]\nkernels: [%s]\n' "$archs" "$manifest" > "$single/package.yaml"
    if "$kpack" build "$single/package.yaml" --header "$single/k.h" --launcher "$single/k.c" --asm "$single/k.S" \
         --work-dir "$single/work" --root "$here" --allow-outside-root --python-path "$dir" --cuda-root "$cuda_root" \
         --python "$python" --quiet > "$single/log" 2>&1; then
      echo "FAILED: left-out kernel $kernel packaged after all: move it to the package"
      status=1
    else
      # kpack's located error, and Triton's own, at the kernel's line, where
      # Triton failed.
      why=$(grep -m1 'error:' "$single/log")
      triton=$(grep -m1 -E '^[^ ]+\.py:[0-9]+:[0-9]+: error: ' "$single/log" || grep -m1 '^Triton failed to compile' "$single/log")
      reasons+=("  $kernel: $(printf '%s%s' "$why" "${triton:+; $triton}" | sed "s|$dir/||g; s|$here/||g")")
    fi
  done
  total=$((packaged + left))
  echo "corpus $name $version: $packaged of $total kernels packaged unchanged"
  for r in "${reasons[@]}"; do echo "$r"; done
  if [ "$packaged" -lt "${GOALS[$name]}" ]; then
    echo "FAILED: the goal is ${GOALS[$name]} of $name's kernels"
    status=1
  fi
done
exit $status
