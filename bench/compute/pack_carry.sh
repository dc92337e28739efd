#!/bin/sh
# bench/compute/pack_carry.sh BUILD: packs what bench/compute/device_run.sh
# runs on the GPU machine (which cannot build kpack: no LLVM, no yaml-cpp)
# into build-carry/compute.tar.xz, under the 64 MiB carry limit; COMMIT
# names the tree they were built from.
set -eu
build=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in tests/gpu/gpu_tma_check tests/gpu/gpu_test tests/gpu/faults_check tests/gpu/gpu_smem_check \
         tests/gpu/libkernels_shared.so bench/launch/kpack_launch_bench; do
  cp "$build/$f" "$stage/"
done
cp -r "$build/manifests/kernels.kpack/fatbins" "$stage/fatbins"
{ git rev-parse --short HEAD; git status --porcelain | grep -q . && echo "(with uncommitted changes)" || true; } |
  tr '\n' ' ' > "$stage/COMMIT"
mkdir -p build-carry
tar -C "$stage" -cJf build-carry/compute.tar.xz .
ls -la build-carry/compute.tar.xz
