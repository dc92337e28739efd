#!/bin/sh
# bench/build_cost/device_run.sh PHASE...: issue 18's GPU-machine
# run, from build-carry/build_cost.tar.xz (bench/build_cost/pack_carry.sh):
#   checks  the bundled kernels from batched fatbins through the real driver:
#           gpu_test, faults_check, gpu_smem_check, gpu_tma_check, Triton parity
#   lazy    kpack_launch_bench --lazy, batched and batch: 1, side by side:
#           device memory after launching 1, 10 and every specialization
#   scale:new, scale:old
#           bench/scale/run.sh (2,000 specializations x 2 archs) with this kpack
#           or the one before batching, on the same 16 cores (two calls: one
#           command may run 10 minutes): CPU-seconds per specialization, wall
#           against the ideal
# The logs go into $OUT/results.tar.gz (at most 8 files come back); the
# commit, device and driver also to $OUT/device.txt.
set -u
phases=" $* "
raw=/tmp/build-cost-raw
rm -rf "$raw"; mkdir -p "$raw"
kp=/tmp/kpack-carry
mkdir -p "$kp"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' build-carry/build_cost.tar.xz "$kp"
export PATH="$kp:$PATH"  # Ninja
{
  echo "commit: $(cat "$kp/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>/dev/null || true
} > "$raw/device.txt"
cat "$raw/device.txt"
cp "$raw/device.txt" "$OUT/device.txt"
status=0
run() {  # name, command...
  name=$1; shift
  "$@" > "$raw/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc; $(grep -E '^[0-9]+ passed, [0-9]+ failed|checks failed' "$raw/$name.log" | tail -1)"
  [ $rc -eq 0 ] || status=1
}
if [ "${phases#* checks }" != "$phases" ]; then
  run gpu_test "$kp/gpu_test"
  run faults_check "$kp/faults_check"
  run gpu_smem_check "$kp/gpu_smem_check"
  run gpu_tma_check "$kp/gpu_tma_check"
  run triton_parity python3 tests/gpu/triton_parity.py --lib "$kp/libkernels_shared.so" --seed 18
fi
if [ "${phases#* lazy }" != "$phases" ]; then
  for round in 1 2; do
    run "lazy_batched_$round" "$kp/kpack_launch_bench" --lazy
    run "lazy_batch1_$round" "$kp/kpack_launch_bench_batch1" --lazy
  done
  tail -n 4 "$raw"/lazy_*.log
  # The first launch in a fresh process (vector_add_f32_b128, whose batch
  # holds all 8 vector_add specializations), alternating the two builds.
  for i in $(seq 1 20); do
    "$kp/kpack_launch_bench" --cold-kpack --quiet >> "$raw/cold_batched.jsonl" 2>> "$raw/cold.log"
    "$kp/kpack_launch_bench_batch1" --cold-kpack --quiet >> "$raw/cold_batch1.jsonl" 2>> "$raw/cold.log"
  done
  python3 - "$raw" <<'PY'
import json, statistics, sys
for name in ("batched", "batch1"):
    v = [json.loads(l) for l in open(f"{sys.argv[1]}/cold_{name}.jsonl") if l.startswith("{")]
    us = sorted(x.get("value", 0) for x in v)
    print(name, "cold first launch: n", len(us), "median", us[len(us) // 2] if us else None, v[0] if v else None)
PY
fi
for which in new old; do
  if [ "${phases#* scale:$which }" != "$phases" ]; then
    JOBS=$(nproc) A=50 B=40 bash bench/scale/run.sh "$kp/kpack-$which" /usr/local/cuda "$raw/scale-$which" \
      > "$raw/scale-$which.log" 2>&1
    echo "scale $which: exit $?"; tail -n 3 "$raw/scale-$which.log"
  fi
done
tar -czf "$OUT/results.tar.gz" -C "$raw" .
exit $status
