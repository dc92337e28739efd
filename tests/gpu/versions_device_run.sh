#!/bin/sh
# tests/gpu/versions_device_run.sh: issue 19's GPU-machine run, the bundled
# Triton kernels against Triton's JIT with the oldest and the newest Triton
# kpack supports, from build-carry/versions.tar.xz (tests/gpu/versions_pack.sh):
#   checks       gpu_test, faults_check, gpu_smem_check, gpu_tma_check
#   parity:old   triton_parity.py on the library built with Triton 3.6.0 (.venv),
#                under the device's own python3 (torch, Triton 3.6.0)
#   parity:new   triton_parity.py on the library built with Triton 3.9.0
#                (.venv-newest), under the device's python3 with Triton 3.9.0
#                put first on PYTHONPATH from the carried parts (below)
# Triton 3.9.0's wheel (273 MiB) is larger than one call may carry (64 MiB):
# tests/gpu/versions_pack.sh writes its files, less what a JIT compile for
# sm_90 never loads (the AMD backend, CUPTI, proton, the sm < 90 ptxas,
# libtriton's debug info), as an xz tar split in two; one call copies the
# first half to /tmp/t39parts, the next carries the second and joins them.
# TRITON_BACKENDS_IN_TREE=1: Triton finds its backends in its own directory,
# not through the entry points, which the device's Triton 3.6 (also on the
# path) registers for the AMD backend left out here.
# The logs go into $OUT/results.tar.gz; the commit, device and driver also
# into $OUT/device.txt.
set -u
phases=" ${*:-checks parity:old parity:new} "
raw=/tmp/versions-raw
rm -rf "$raw"; mkdir -p "$raw"
kp=/tmp/versions-carry
rm -rf "$kp"; mkdir -p "$kp"
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' build-carry/versions.tar.xz "$kp"
{
  echo "commit: $(cat "$kp/COMMIT")"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
} > "$raw/device.txt"
cat "$raw/device.txt"
status=0
run() {  # name, command...
  name=$1; shift
  "$@" > "$raw/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc; $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$raw/$name.log" | tail -1)"
  [ $rc -eq 0 ] || status=1
}
if [ "${phases#* checks }" != "$phases" ]; then
  for t in gpu_test faults_check gpu_smem_check gpu_tma_check; do run "$t" "$kp/$t"; done
fi
if [ "${phases#* parity:old }" != "$phases" ]; then
  run parity_triton36 python3 tests/gpu/triton_parity.py --lib "$kp/libkernels_shared_36.so" --seed 19
fi
if [ "${phases#* parity:new }" != "$phases" ]; then
  cp .t39b/t39.part01 /tmp/t39parts/ 2>/dev/null
  cat /tmp/t39parts/t39.part00 /tmp/t39parts/t39.part01 > /tmp/t39parts/t39.tar.xz 2>/dev/null
  if [ "$(sha256sum /tmp/t39parts/t39.tar.xz | cut -d' ' -f1)" = "$(cut -d' ' -f1 .t39b/t39.sha256)" ]; then
    rm -rf /tmp/t39 && mkdir -p /tmp/t39
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' /tmp/t39parts/t39.tar.xz /tmp/t39
    PYTHONPATH=/tmp/t39 TRITON_BACKENDS_IN_TREE=1 python3 -c 'import triton; print("triton", triton.__version__, triton.__file__)' \
      >> "$raw/device.txt" 2>&1
    run parity_triton39 env PYTHONPATH=/tmp/t39 TRITON_BACKENDS_IN_TREE=1 python3 tests/gpu/triton_parity.py \
      --lib "$kp/libkernels_shared_39.so" --seed 19
  else
    echo "parity:new: the Triton 3.9.0 parts are missing or do not join (sha256)" | tee "$raw/parity_triton39.log"
    status=1
  fi
fi
tail -n 1 "$raw/device.txt"
cp "$raw/device.txt" "$OUT/device.txt"
tar -czf "$OUT/results.tar.gz" -C "$raw" .
exit $status
