#!/usr/bin/env bash
# CPU cost of a clean build of the bundled package (issue 18): runs
# `kpack build` on manifests/kpack.yaml with an empty work directory and an
# empty unit cache, and records the CPU-seconds of kpack and every process
# it started (GNU time's user + system of the whole tree), the wall time and
# kpack's --perf lines.
#
#   bench/build_cost/bundled.sh KPACK TRITON_HELPER OUT_FILE [extra kpack options]
set -eu
kpack=$(realpath "$1"); helper=$(realpath "$2"); out=$3; shift 3
root=$(dirname "$(dirname "$(dirname "$(realpath "$0")")")")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# A clean build: Triton's own cache (~/.triton/cache) empty too.
export TRITON_CACHE_DIR=$work/triton-cache
/usr/bin/time -f "time wall %e user %U system %S maxrss_kb %M" -o "$work/time.txt" \
  "$kpack" build "$root/manifests/kpack.yaml" --header "$work/kernels.h" --launcher "$work/kernels_launch.c" \
  --asm "$work/kernels_fatbins.S" --work-dir "$work/w" --root "$root" --cuda-root "${CUDA_ROOT:-/usr/local/cuda}" \
  --triton-helper "$helper" -j "${JOBS:-$(nproc)}" --quiet --perf "$@" > "$work/perf.txt" 2>&1 || {
    cat "$work/perf.txt"; exit 1; }
{ cat "$work/perf.txt"; cat "$work/time.txt"; } | tee "$out"
