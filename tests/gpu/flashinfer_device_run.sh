#!/usr/bin/env bash
# Runs the FlashInfer corpus check on a machine with a GPU (no nvcc or meson
# needed), from the repository root, on the build of
#   tests/gpu/flashinfer_build.sh build/compiler/kpack .device/flashinfer
# copied along (FLASHINFER_DIR overrides .device/flashinfer):
#
#   check              every specialization, kpack vs. the direct launch of
#                      the same instantiation (bit for bit) and vs. the CPU
#                      reference, PDL on and off
#   check_no_ptx_jit   the same with CUDA_DISABLE_PTX_JIT=1 (SASS only)
#   pdl_bench          chains of dependent rmsnorm launches with and without
#                      PDL, through kpack and directly (GPU time)
#   launch_bench       host time per launch, kpack vs. the raw driver call
#                      (pinned to CPU 2 when taskset exists)
#
# Writes to $OUT (default ./device-out) five files: summary.txt (the device,
# each run's exit status and counts, the pdl:/launch: lines, FAIL lines),
# logs.tar.gz (every log in full), check.json, pdl.json and launch.json.
# Exit status 0 when every run exited 0.  The time limits below keep the
# whole run under 10 minutes even if something hangs; a normal run takes
# about two.
set -u
out=${OUT:-device-out}
dir=${FLASHINFER_DIR:-.device/flashinfer}
prog=$dir/flashinfer_check
mkdir -p "$out"
logs=$(mktemp -d)
status=0
if [ ! -x "$prog" ]; then
  echo "flashinfer_device_run: no $prog (build it with tests/gpu/flashinfer_build.sh)" | tee "$out/summary.txt"
  exit 1
fi

run() {  # name, seconds, [VAR=value...] command...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout -k 10 "$limit" env "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc ($((SECONDS - start)) s); $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/$name.log" | tail -1)"
}

pin=()
if command -v taskset > /dev/null && taskset -c 2 true 2> /dev/null; then pin=(taskset -c 2); fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(cat "$dir/COMMIT" 2> /dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader \
    || echo "nvidia-smi failed"
  run check 200 "$prog" --timeout 190 --json "$out/check.json"
  run check_no_ptx_jit 200 CUDA_DISABLE_PTX_JIT=1 "$prog" --timeout 190
  run pdl_bench 90 "$prog" --pdl-bench --timeout 80 --json "$out/pdl.json"
  run launch_bench 90 ${pin[@]+"${pin[@]}"} "$prog" --launch-bench --timeout 80 --json "$out/launch.json"
  echo "launch_bench pinned: ${pin[*]:-no}"
  grep -h -E '^flashinfer_check: (seed|device|package|skipped|error)' "$logs/check.log"
  grep -h -E '^(pdl|launch|launch_ratio):' "$logs/pdl_bench.log" "$logs/launch_bench.log"
  grep -h -E '^FAIL|^flashinfer_check: error' "$logs"/*.log | head -40
} 2>&1 | tee "$out/summary.txt"
# The runs happened in the pipeline's subshell: their statuses are in the summary.
grep -q -E '^[a-z_]+: exit [^0]' "$out/summary.txt" && status=1
tar czf "$out/logs.tar.gz" -C "$logs" .
rm -rf "$logs"
exit $status
