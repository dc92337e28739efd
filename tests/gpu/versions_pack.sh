#!/bin/sh
# tests/gpu/versions_pack.sh BUILD_OLD BUILD_NEW TRITON_WHEEL: packs what
# tests/gpu/versions_device_run.sh runs on the GPU machine.
#   BUILD_OLD     the build with Triton 3.6.0 (.venv): the GPU checks and
#                 its libkernels_shared.so
#   BUILD_NEW     the build with -Dpython=.venv-newest/bin/python3 (3.9.0):
#                 its libkernels_shared.so (`meson compile -C B kernels_shared`)
#   TRITON_WHEEL  the triton-3.9.0 wheel for the device's Python (cp312 abi3
#                 there: pip download --python-version 3.12 ...)
# Writes build-carry/versions.tar.xz and the wheel's files, slimmed to what a
# JIT compile for sm_90 loads and split in two, as .t39a/ and .t39b/ (each
# under the 64 MiB a device call carries; add both to .git/info/exclude).
set -eu
old=$1 new=$2 wheel=$3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in gpu_test faults_check gpu_smem_check gpu_tma_check; do cp "$old/tests/gpu/$f" "$stage/"; done
cp "$old/tests/gpu/libkernels_shared.so" "$stage/libkernels_shared_36.so"
cp "$new/tests/gpu/libkernels_shared.so" "$stage/libkernels_shared_39.so"
{ git rev-parse --short HEAD; git status --porcelain | grep -q . && echo "(with uncommitted changes)" || true; } |
  tr '\n' ' ' > "$stage/COMMIT"
mkdir -p build-carry
tar -C "$stage" -cJf build-carry/versions.tar.xz .
ls -la build-carry/versions.tar.xz
# The wheel, less the AMD backend, CUPTI, proton, the pre-Blackwell ptxas
# (3.9 compiles sm_90 with ptxas-blackwell), cuobjdump, nvdisasm and
# libtriton's debug info: 1 GB unpacked, 273 MiB as a wheel, 68 MiB here.
mkdir "$stage/w"
unzip -q "$wheel" -d "$stage/w"
(cd "$stage/w" && rm -rf triton/backends/amd triton/backends/nvidia/lib/cupti* triton/_C/libproton.so \
   triton/profiler triton/backends/nvidia/bin/ptxas triton/backends/nvidia/bin/cuobjdump \
   triton/backends/nvidia/bin/nvdisasm && strip --strip-debug triton/_C/libtriton.so &&
 tar cf - triton triton-*.dist-info | xz -6 -T2 > "$stage/t39.tar.xz")
rm -rf .t39a .t39b && mkdir .t39a .t39b
split -n 2 -d "$stage/t39.tar.xz" "$stage/t39.part"
mv "$stage/t39.part00" .t39a/ && mv "$stage/t39.part01" .t39b/
(cd "$stage" && sha256sum t39.tar.xz) > .t39b/t39.sha256
ls -la .t39a .t39b
