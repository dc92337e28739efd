#!/usr/bin/env bash
# Runs the launch-attribute check on a machine with an sm_90 GPU (no nvcc
# or meson needed), from the repository root, on the build of
#   tests/gpu/attrs/attrs_build.sh build/compiler/kpack .device/attrs
# copied along (ATTRS_DIR overrides .device/attrs):
#
#   check              every specialization (clusters, cooperative launch),
#                      through kpack and directly
#   check_no_ptx_jit   the same with CUDA_DISABLE_PTX_JIT=1 (SASS only), on
#                      other random inputs
#
# Writes to $OUT (default ./device-out) summary.txt (the device, each run's
# exit status and counts, the device/occupancy lines, the driver's refusals
# as kpack reported them, FAIL lines) and logs.tar.gz (every log in full).
# Exit status 0 when every run exited 0.  The time limits keep the whole
# run under 5 minutes even if a grid barrier hangs; a normal run takes
# seconds.
set -u
out=${OUT:-device-out}
dir=${ATTRS_DIR:-.device/attrs}
prog=$dir/attrs_check
mkdir -p "$out"
logs=$(mktemp -d)
status=0
if [ ! -x "$prog" ]; then
  echo "attrs_device_run: no $prog (build it with tests/gpu/attrs/attrs_build.sh)" | tee "$out/summary.txt"
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

{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(cat "$dir/COMMIT" 2> /dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader \
    || echo "nvidia-smi failed"
  run check 120 "$prog" --timeout 100
  run check_no_ptx_jit 120 CUDA_DISABLE_PTX_JIT=1 "$prog" --timeout 100
  grep -h -E '^attrs_check: (seed|device|package|skipped|error|grid_reduce)' "$logs/check.log"
  grep -h -E '^PASS .* refused' "$logs/check.log"
  grep -h -E '^FAIL|^attrs_check: error' "$logs"/*.log | head -40
} 2>&1 | tee "$out/summary.txt"
# The runs happened in the pipeline's subshell: their statuses are in the summary.
grep -q -E '^[a-z_]+: exit [^0]' "$out/summary.txt" && status=1
tar czf "$out/logs.tar.gz" -C "$logs" .
rm -rf "$logs"
exit $status
