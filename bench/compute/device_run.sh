#!/bin/sh
# bench/compute/device_run.sh [checks|bench|all]: issue 17's GPU run, on the lent machine, from
# binaries built on the build machine and carried as build-carry/compute.tar.xz
# (bench/compute/pack_carry.sh BUILD makes it):
#   gpu_tma_check         TMA descriptors, clusters and Triton's scratch through
#                         the runtime and the real driver (tests/gpu/tma_check.cc)
#   gpu_test, faults_check, gpu_smem_check
#                         the bundled kernels and the runtime's statuses, again
#                         (the launch path changed)
#   triton_parity.py      the bundled Triton kernels against the JIT, bit for bit
#   kpack_compute_bench.py  the compute-bound kernels against the JIT, cuBLAS
#                         and SDPA (bench/compute/README.md)
#   kpack_launch_bench --launch  the launch path's host cost against the raw driver
# checks: all but kpack_compute_bench.py; bench: it alone; all (the default): both.
# Everything goes to $OUT; the commit, device and driver to $OUT/device.txt.
set -u
phase=${1:-all}
kp=/tmp/kpack-carry
mkdir -p "$kp"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' build-carry/compute.tar.xz "$kp"
{
  echo "commit: $(cat "$kp/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>/dev/null || true
} > "$OUT/device.txt"
cat "$OUT/device.txt"
status=0
run() {  # name, command...
  name=$1; shift
  "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc; $(grep -E '^[0-9]+ passed, [0-9]+ failed|checks failed' "$OUT/$name.log" | tail -1)"
  [ $rc -eq 0 ] || status=1
}
if [ "$phase" != bench ]; then
  run gpu_tma_check "$kp/gpu_tma_check"
  grep -E '^(FAIL|INFO)' "$OUT/gpu_tma_check.log"
  run gpu_test "$kp/gpu_test"
  run faults_check "$kp/faults_check"
  run gpu_smem_check "$kp/gpu_smem_check"
  run triton_parity python3 tests/gpu/triton_parity.py --lib "$kp/libkernels_shared.so" --seed 17
  "$kp/kpack_launch_bench" --launch "$kp/fatbins" > "$OUT/launch.jsonl" 2> "$OUT/launch.log"
  tail -3 "$OUT/launch.log"
fi
if [ "$phase" != checks ]; then
  run compute_bench env OUT="$OUT" python3 bench/compute/kpack_compute_bench.py --lib "$kp/libkernels_shared.so" ${QUICK:+--quick}
  grep -vE '^(PASS|ok)' "$OUT/compute_bench.log" | tail -70
fi
exit $status
