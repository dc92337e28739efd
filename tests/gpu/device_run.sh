#!/usr/bin/env bash
# Runs the GPU checks on a machine with a GPU, from the repository root, on
# binaries built elsewhere and copied into .device/ (see tests/gpu/README.md):
#   gpu_test              every bundled specialization vs. the CPU reference
#   gpu_arch_check        the library built for the device's arch runs
#   gpu_arch_check_sm80   a library built for sm_80 only, on sm_90: the clear
#                         no-SASS status, no JIT
#   consumer_c99          the C99 consumer, with a real driver present
#   faults_check          the runtime's fault statuses from the real driver
#                         (no context, bad streams, wrong/destroyed context,
#                         out of memory while loading, no device, no libcuda)
#   gpu_smem_check        launches above 48 KiB of dynamic shared memory, up
#                         to the device's opt-in maximum, and one beyond it
# Logs go to $OUT (or ./device-out).  Prints one summary line per check.
set -u
out=${OUT:-device-out}
mkdir -p "$out"
bin=.device
status=0
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(cat $bin/COMMIT 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader
} | tee "$out/device.txt"

run() {  # name, env..., command...
  local name=$1; shift
  env "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc; $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.log" | tail -1)"
  [ $rc -eq 0 ] || status=1
}
run gpu_test                 $bin/gpu_test
run gpu_test_no_ptx_jit      CUDA_DISABLE_PTX_JIT=1 $bin/gpu_test
run gpu_arch_check           $bin/gpu_arch_check
run gpu_arch_check_sm80      CUDA_DISABLE_PTX_JIT=1 $bin/gpu_arch_check_sm80
run consumer_c99             $bin/consumer_c99
run faults_check             $bin/faults_check
run gpu_smem_check           $bin/gpu_smem_check
grep -h -E '^(FAIL|device sm_|launch without)' "$out"/*.log | head -40
exit $status
