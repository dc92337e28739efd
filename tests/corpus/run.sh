#!/usr/bin/env bash
# The corpus: other projects' Triton and CUDA kernels, packaged unchanged from their
# pinned wheels (requirements.txt, fetched by fetch.sh into the corpus
# cache).  For each package it
#   - proves the cached files are the wheel's, byte for byte (its RECORD);
#   - builds the package of manifests this project wrote for its kernels
#     (tests/corpus/<package>/package.yaml), with the wheel's directory on
#     kpack's python path and nothing of it imported, and a CUDA package's
#     include directory in the wheel (INCLUDES) as kpack's -I;
#   - builds each kernel it leaves out (tests/corpus/<package>/left_out/),
#     which must fail, and prints kpack's first error as the reason;
#   - prints `corpus <package> <version>: N of M kernels packaged unchanged`
#     and fails below the goal (GOALS below).
#
#   run.sh KPACK CUDA_ROOT PYTHON [CACHE]
#
# PYTHON runs Triton (kpack --python).  Without the cache it skips (77),
# except under CI=true, where .ci/setup has fetched it and its absence is a
# failure.  KPACK_CORPUS_ARCHS (default sm_90) chooses the archs of the
# Triton packages: one keeps CI's build time down; the manifests name every
# arch an engine ships.  The CUDA packages build every arch their manifests
# name (ALL_ARCHS).  KPACK_CORPUS_TRITON=VERSION checks that each Triton
# package's inventory records that Triton (tests/triton/newest.sh);
# KPACK_CORPUS_UNIT_CACHE is kpack's --cache-dir (default: a fresh one);
# KPACK_CORPUS_PACKAGES (wheel names, e.g. "liger_kernel fla_core") builds
# only those.
set -uo pipefail
kpack=$(realpath "$1") cuda_root=$2 python=$3
here=$(cd "$(dirname "$0")" && pwd)
cache=${4:-${KPACK_CORPUS_CACHE:-$HOME/.cache/kpack/corpus}}
archs=${KPACK_CORPUS_ARCHS:-sm_90}
expect_triton=${KPACK_CORPUS_TRITON:-}
unit_cache=${KPACK_CORPUS_UNIT_CACHE:-}
only=${KPACK_CORPUS_PACKAGES:-}
declare -A GOALS=([liger_kernel]=20 [fla_core]=19 [flashinfer_python]=5)
declare -A MANIFESTS=([liger_kernel]=liger [fla_core]=fla [flashinfer_python]=flashinfer)
# Include roots (kpack's -I), relative to the cache: CCCL 3.1 first, whose
# libcu++ FlashInfer's pos_enc.cuh needs, then FlashInfer's headers.
declare -A INCLUDES=([flashinfer_python]="nvidia_cuda_cccl-13.1.115/nvidia/cu13/include/cccl flashinfer_python-0.7.2.post1/flashinfer/data/include")
declare -A ALL_ARCHS=([flashinfer_python]=1)

if [ ! -d "$cache" ]; then
  if [ "${CI:-}" = true ]; then echo "FAILED: no corpus cache at $cache (.ci/setup fetches it)"; exit 1; fi
  echo "no corpus cache at $cache (tests/corpus/fetch.sh fetches it): skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0

# Every file of an unpacked wheel (whole, or the members fetch.sh extracted)
# against the sha256 in its RECORD.
verify_unchanged() {  # verify_unchanged DIR
  "$python" "$here/verify_record.py" "$1"
}

for dir in "$cache"/*-*; do
  [ -d "$dir" ] || continue
  base=$(basename "$dir") name=${base%-*} version=${base##*-}
  manifests=${MANIFESTS[$name]:-}
  if [ -z "$manifests" ]; then  # headers another package includes: only checked
    verify_unchanged "$dir" > /dev/null || { echo "FAILED: $dir is not its wheel's"; status=1; }
    continue
  fi
  [ -z "$only" ] || [[ " $only " == *" $name "* ]] || continue
  echo "== $name $version ($dir)"
  if ! verify_unchanged "$dir"; then status=1; continue; fi
  package=$here/$manifests/package.yaml
  out=$work/$manifests
  extra=()
  for include in ${INCLUDES[$name]:-}; do extra+=(-I "$cache/$include"); done
  [ -n "${ALL_ARCHS[$name]:-}" ] || extra+=(--archs "$archs")
  [ -z "$unit_cache" ] || extra+=(--cache-dir "$unit_cache")
  if "$kpack" build "$package" --header "$out/k.h" --launcher "$out/k.c" --asm "$out/k.S" --work-dir "$out/work" \
       --inventory "$out/k.json" --root "$here" --python-path "$dir" --cuda-root "$cuda_root" --python "$python" \
       "${extra[@]}" --quiet -v > "$work/$manifests.log" 2>&1; then
    grep '^kpack: .* units' "$work/$manifests.log"
    # The generated launchers must compile: a consumer builds them.
    if ! cc -c -std=c11 -Wall -Werror -I "$out" -I "$here/../../runtime" -I "$cuda_root/include" "$out/k.c" \
         -o "$out/k.o" 2> "$work/$manifests.cc.log"; then
      echo "FAILED: the $manifests launchers do not compile"; head -20 "$work/$manifests.cc.log"; status=1
    fi
    packaged=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' "$out/k.json")
    # The Triton that compiled a Triton package, as its inventory records it.
    if [ -n "$expect_triton" ] && grep -q '"language": "triton"' "$out/k.json"; then
      said=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["toolchain"]["triton"])' "$out/k.json")
      if [[ "$said" == "triton $expect_triton python "* ]]; then
        echo "built with $said"
      else
        echo "FAILED: the $manifests inventory says it was built with '$said', not Triton $expect_triton"; status=1
      fi
    fi
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
  echo "corpus ${name//_/-} $version: $packaged of $total kernels packaged unchanged"
  for r in "${reasons[@]}"; do echo "$r"; done
  if [ "$packaged" -lt "${GOALS[$name]}" ]; then
    echo "FAILED: the goal is ${GOALS[$name]} of $name's kernels"
    status=1
  fi
done
exit $status
