#!/bin/sh
# bench/tune/device_run.sh PHASE: issue 16's GPU runs, on the lent machine,
# from binaries built on the build machine and carried as
# build-carry/tune.tar.xz (bench/tune/README.md says how it is made).
#
#   tune  kpack tune of the whole bundled package (timed: the goal is at most
#         5 minutes), writing $OUT/<gpu>.yaml and the report $OUT/<gpu>.html.
#   eval  with a library built with that tuning file: the harness's --eval
#         (every candidate and the auto dispatcher at untuned shapes),
#         Triton's own @autotune at the same shapes, the launch bench (what
#         the auto dispatcher adds to a launch) and the cold first launches,
#         and Triton's JIT costs, for bench/RESULTS.md.
#
# Everything goes to $OUT; the command, device and driver go to $OUT/device.txt.
#   auto  eval where manifests/tuning has this GPU's file with probes (the
#         library was built with it), else tune: whichever model the lent
#         machine turns out to be, the call yields something.
set -eu
phase=$1
if [ "$phase" = auto ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  phase=tune
  for f in manifests/tuning/*.yaml; do
    if grep -qxF "gpu: $gpu" "$f" && grep -q '^        probes:$' "$f"; then phase=eval; fi
  done
  echo "auto: $gpu -> $phase"
fi
kp=/tmp/kpack-carry
mkdir -p "$kp"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' build-carry/tune.tar.xz "$kp"
export LD_LIBRARY_PATH="$kp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "phase: $phase"
  echo "commit: $(cat "$kp/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>/dev/null || true
} > "$OUT/device.txt"
cat "$OUT/device.txt"
case "$phase" in
tune)
  start=$(date +%s.%N)
  "$kp/kpack" tune manifests/kpack.yaml --tuner "$kp/kernels-tune" -o "$OUT" --root . --perf \
    --triton-helper compiler/triton_helper.py 2> "$OUT/tune.log"
  end=$(date +%s.%N)
  echo "kpack tune of the bundled package: $(python3 -c "print(round($end - $start, 1))") s wall" | tee -a "$OUT/device.txt"
  tail -5 "$OUT/tune.log"
  ;;
eval)
  "$kp/kernels-tune" --eval 16 --seed 1 > "$OUT/eval.jsonl" 2> "$OUT/eval.log"
  # Engines' shapes are often multiples of 16 (then a Triton kernel's
  # aligned variant runs, as at every tuned shape): those separately.
  "$kp/kernels-tune" --eval 16 --seed 2 --eval-multiple 16 > "$OUT/eval16.jsonl" 2>> "$OUT/eval.log"
  echo "eval lines: $(grep -c '"eval"' "$OUT/eval.jsonl")"
  PYTHONUNBUFFERED=1 python3 bench/tune/triton_autotune.py "$OUT/eval.jsonl" > "$OUT/autotune.jsonl" 2>> "$OUT/eval.log"
  echo "autotune lines: $(wc -l < "$OUT/autotune.jsonl")"
  "$kp/kpack_launch_bench" --launch "$kp/fatbins" > "$OUT/launch.jsonl" 2>> "$OUT/eval.log"
  "$kp/kpack_launch_bench" --dispatch-cost >> "$OUT/launch.jsonl" 2>> "$OUT/eval.log"
  "$kp/kpack_launch_bench" --cold-diagnostic-runs 0 --cold-repeat 12 "$kp/fatbins" >> "$OUT/launch.jsonl" 2>> "$OUT/eval.log"
  PYTHONUNBUFFERED=1 python3 bench/triton/triton_jit_cost.py --reps 5 > "$OUT/jit.jsonl" 2>> "$OUT/eval.log" || true
  grep -E '"(auto_minus|dispatcher_minus|kpack_auto|kpack_dispatcher|kpack_typed|empty_)' "$OUT/launch.jsonl" || true
  ;;
*)
  echo "usage: device_run.sh tune|eval|auto" >&2
  exit 2
  ;;
esac
