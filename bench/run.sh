#!/usr/bin/env bash
# Runs every benchmark in one go on a machine with a GPU, from the
# repository root, on binaries built elsewhere and copied into .device/
# (bench/README.md says how), then prints one table of ratios.
#   OUT=dir bash bench/run.sh      (default: ./bench-out)
set -u
out=${OUT:-bench-out}
bin=.device
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(cat $bin/COMMIT 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$out/device.txt" 2>&1
cat "$out/device.txt"

step() {  # name, timeout, command...
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.jsonl" 2> "$out/$name.err"
  echo "$name: exit $? in $((SECONDS - start)) s" | tee -a "$out/steps.txt"
}
# Steps to run: the arguments, or all of them.  Splitting lets one run fit
# a per-command time limit: `run.sh launch throughput` then `run.sh triton_throughput`.
steps=${*:-launch throughput triton_jit zero_jit triton_throughput}
for s in $steps; do
  case $s in
    launch) step launch 300 $bin/kpack_launch_bench --all $bin/fatbins ;;
    throughput) step throughput 300 $bin/kpack_throughput_bench ;;
    # --match-kpack: Triton's JIT also runs every configuration kpack ran
    # (run the throughput step first), for the same-configuration table.
    triton_throughput) step triton_throughput 420 python3 bench/triton/triton_throughput.py \
                         $( [ -s "$out/throughput.jsonl" ] && echo --match-kpack "$out/throughput.jsonl") ;;
    triton_jit) step triton_jit 300 python3 bench/triton/triton_jit_cost.py ;;
    # Zero JIT: every specialization with PTX JIT disabled, and a library
    # built without the device's arch failing with kpack's status.
    zero_jit)
      step zero_jit_gpu_test 300 env CUDA_DISABLE_PTX_JIT=1 $bin/gpu_test
      step zero_jit_no_sass 60 env CUDA_DISABLE_PTX_JIT=1 $bin/gpu_arch_check_sm80 ;;
    *) echo "unknown step $s" ;;
  esac
done
python3 bench/report.py "$out" | tee "$out/report.md"
# A device run returns few files: pack the logs into one archive.
if [ -n "${OUT:-}" ]; then
  # Written beside, then moved in: tar must not read the archive it writes.
  tar czf "$OUT/../bench-logs.tgz.tmp" -C "$out" --exclude=report.md . &&
    find "$OUT" -maxdepth 1 -type f ! -name report.md -delete &&
    mv "$OUT/../bench-logs.tgz.tmp" "$OUT/bench-logs.tgz"
fi
